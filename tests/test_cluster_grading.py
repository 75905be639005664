"""A class graded on a Dask cluster (`--cluster local:N`, `--scheduler ADDRESS`): the same files as
`--jobs`, nothing lost when a worker or the client dies, and a node that cannot grade as asked is
refused and named. Loopback addresses only."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from autograder.course import COURSE
from conftest import ROOT, notebook_with, run_cli
from test_class_grading import _marked

pytestmark = pytest.mark.slow     # grades whole classes
# Killed workers and clients, refused nodes, failing tasks: each starts clusters of its own (10-60 s
# each). `.ci/run` runs them (`-m extended`); the default run keeps the cluster's ordinary path.
extended = pytest.mark.extended

LESSONS = ("01_scaled_dot_product_attention", "02_masking")
STUDENTS = ("ada", "bob", "cyd", "dan")
NO_NAMESPACES = ROOT / "tests" / "support" / "no_namespaces.py"


def make_class(root: Path) -> Path:
    """ada: the solutions; bob: the blank lessons; cyd: a broken file and a transposed mask; dan: one of each."""
    for lesson in LESSONS:
        for name, source in (("ada", COURSE[lesson].solution_path), ("bob", COURSE[lesson].released_path)):
            (root / name).mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / name / f"{lesson}.ipynb")
    (root / "cyd").mkdir()
    (root / "cyd" / f"{LESSONS[0]}.ipynb").write_text("{ broken")
    notebook_with(LESSONS[1], {"causal_mask": "def causal_mask(seq_len):\n"
                                              "    return np.triu(np.ones((seq_len, seq_len), dtype=bool))\n"},
                  root / "cyd")
    (root / "dan").mkdir()
    shutil.copy(COURSE[LESSONS[0]].solution_path, root / "dan" / f"{LESSONS[0]}.ipynb")
    shutil.copy(COURSE[LESSONS[1]].released_path, root / "dan" / f"{LESSONS[1]}.ipynb")
    return root


def student_files(out: Path) -> dict[str, dict]:
    return {s: {"results": json.loads((out / "students" / s / "results.json").read_text()),
                "feedback": (out / "students" / s / "feedback.md").read_text()} for s in STUDENTS}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The class graded with --jobs 2: what every cluster run must give."""
    root = tmp_path_factory.mktemp("cluster-class")
    make_class(root / "class")
    run = run_cli("grade", root / "class", "--out", root / "jobs", "--jobs", "2")
    assert run.returncode == 0, run.stderr
    return root


def _copy_class(reference: Path, tmp_path: Path) -> Path:
    shutil.copytree(reference / "class", tmp_path / "class")
    return tmp_path / "class"


def test_a_local_cluster_writes_what_jobs_writes(reference, tmp_path):
    run = run_cli("grade", reference / "class", "--out", tmp_path / "out", "--cluster", "local:2",
                  "--json", tmp_path / "r.json")
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "out" / "grades.csv").read_bytes() == (reference / "jobs" / "grades.csv").read_bytes()
    assert student_files(tmp_path / "out") == student_files(reference / "jobs")
    assert (tmp_path / "out" / "class-report.html").is_file()
    assert json.loads((tmp_path / "r.json").read_text()) == {s: f["results"] for s, f in
                                                           student_files(reference / "jobs").items()}
    assert "cluster: 4 student(s) graded on" in run.stdout and "REFUSED" not in run.stdout
    assert "sandbox: bubblewrap" in run.stdout          # the layers the nodes graded with, as --jobs says them
    assert "grading: 100%" in run.stderr                # the same progress bar
    # resumed: nothing is graded again, and the cluster is not even started
    again = run_cli("grade", reference / "class", "--out", tmp_path / "out", "--cluster", "local:2")
    assert again.returncode == 0 and "cluster:" not in again.stdout, again.stdout


def _start(cmd, marker, env=(), **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{marker: "1"}, **dict(env))
    return subprocess.Popen([sys.executable, *map(str, cmd)], cwd=ROOT, env=env, **kw)


def _written(out: Path) -> set[str]:
    return {p.parent.name for p in (out / "students").glob("*/fingerprint")} if (out / "students").exists() else set()


def _wait(condition, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def _gone(marker: str, seconds: float = 15) -> dict:
    deadline = time.monotonic() + seconds
    while _marked(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = _marked(marker)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return left


def _bigger_class(reference: Path, tmp_path: Path) -> Path:
    """The class twice over (8 students), so that a kill lands while students are being graded."""
    folder = _copy_class(reference, tmp_path)
    for name in STUDENTS:
        shutil.copytree(folder / name, folder / f"{name}2")
    return folder


@extended
def test_a_worker_killed_mid_run_loses_no_student_and_leaves_no_process(reference, tmp_path):
    folder = _bigger_class(reference, tmp_path)
    out = tmp_path / "out"
    marker = f"AUTOGRADER_TEST_MARK_{uuid.uuid4().hex}"
    client = _start(["-m", "autograder", "grade", folder, "--out", out, "--cluster", "local:2"], marker,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait(lambda: _written(out) or client.poll() is not None, 120, "the first student")
        workers = [pid for pid, cmd in _marked(marker).items() if "spawn_main" in cmd and _parent(pid) == client.pid]
        assert len(workers) == 2 and len(_written(out)) < 8, (workers, _written(out))
        os.kill(workers[0], signal.SIGKILL)
        stdout, stderr = client.communicate(timeout=300)
    finally:
        if client.poll() is None:
            client.kill()
    assert client.returncode == 0, stderr[-3000:]
    assert _written(out) == {s + suffix for s in STUDENTS for suffix in ("", "2")}
    expected = student_files(reference / "jobs")
    for name in _written(out):
        got = json.loads((out / "students" / name / "results.json").read_text())
        assert got == expected[name.rstrip("2")]["results"], name
    assert "NOT GRADED" not in stdout
    assert stdout.count("  LOST tcp://127.0.0.1:") == 1, stdout      # the kill came during the run, and is said
    assert not _gone(marker), "processes outlived the class run"


def _parent(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2:].split()[1])


@extended
def test_a_killed_client_resumes_without_grading_anyone_twice(reference, tmp_path):
    folder = _bigger_class(reference, tmp_path)
    out = tmp_path / "out"
    marker = f"AUTOGRADER_TEST_MARK_{uuid.uuid4().hex}"
    client = _start(["-m", "autograder", "grade", folder, "--out", out, "--cluster", "local:2"], marker,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: _written(out) or client.poll() is not None, 120, "the first student")
        client.kill()                 # SIGKILL: no clean-up of any kind
        client.wait(timeout=30)
    finally:
        if client.poll() is None:
            client.kill()
    assert not _gone(marker), "the cluster's processes outlived the killed client"
    first = {name: (out / "students" / name / "results.json").stat().st_mtime_ns for name in _written(out)}
    assert 0 < len(first) < 8, first
    run = run_cli("grade", folder, "--out", out, "--cluster", "local:2")
    assert run.returncode == 0, run.stderr[-3000:]
    assert _written(out) == {s + suffix for s in STUDENTS for suffix in ("", "2")}
    for name, mtime in first.items():     # graded before the kill: not graded again
        assert (out / "students" / name / "results.json").stat().st_mtime_ns == mtime, name
    assert f"cluster: {8 - len(first)} student(s) graded" in run.stdout, run.stdout


@extended
def test_a_node_without_its_sandbox_is_refused_and_named(reference, tmp_path):
    """Three nodes on one scheduler: one as it should be, one in a Docker-like process where
    bubblewrap cannot make namespaces (tests/support/no_namespaces.py), one with another course
    secret: every student is graded on the first, and the summary names the others and why."""
    marker = f"AUTOGRADER_TEST_MARK_{uuid.uuid4().hex}"
    scheduler_file = tmp_path / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    worker = ["-m", "distributed.cli.dask_worker", "--scheduler-file", scheduler_file, "--nthreads", "1",
              "--host", "127.0.0.1", "--no-dashboard"]
    procs = [_start(["-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", scheduler_file], marker, **quiet)]
    try:
        _wait(scheduler_file.exists, 60, "the scheduler")
        procs.append(_start(worker, marker, **quiet))
        procs.append(_start([NO_NAMESPACES, "--", sys.executable, *worker], marker, **quiet))
        # a node given another course secret would grade on other hidden inputs
        procs.append(_start(worker, marker, env={"AUTOGRADER_SECRET": uuid.uuid4().hex}, **quiet))
        address = json.loads(scheduler_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        _wait(lambda: _workers(address) == 3, 120, "three workers")
        run = run_cli("grade", reference / "class", "--out", tmp_path / "out", "--scheduler", address)
        assert run.returncode == 0, run.stderr[-3000:]
        assert student_files(tmp_path / "out") == student_files(reference / "jobs")
        refused = sorted(line for line in run.stdout.splitlines() if "REFUSED" in line)
        assert len(refused) == 2, run.stdout
        assert "its course differs from the client's" in refused[0] + refused[1]
        assert "MISSING namespaces" in refused[0] + refused[1]
        assert "4 student(s) graded on 1 node(s)" in run.stdout
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    assert not _gone(marker), "processes outlived the cluster"


def _workers(address: str) -> int:
    code = ("import sys; from distributed import Client\n"
            "with Client(sys.argv[1], timeout=30) as c: print(len(c.scheduler_info()['workers']))")
    run = subprocess.run([sys.executable, "-c", code, address], capture_output=True, text=True, timeout=60)
    return int(run.stdout.strip() or 0)


@extended
def test_with_no_node_that_may_grade_nothing_is_graded_and_each_node_is_named(reference, tmp_path):
    """Every node lacks namespaces: refused, and said; --allow-missing-layers grades on them and names them."""
    wrap = [sys.executable, NO_NAMESPACES, "--", sys.executable, "-m", "autograder", "grade", reference / "class",
            "--out", tmp_path / "out", "--cluster", "local:2"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run(list(map(str, wrap)), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-3000:]
    assert "nothing was graded: no node of the cluster may grade" in run.stderr
    assert run.stderr.count("MISSING namespaces") == 2, run.stderr
    assert not _written(tmp_path / "out")
    run = subprocess.run(list(map(str, wrap + ["--allow-missing-layers"])), cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.count("with a layer missing: MISSING namespaces") == 2, run.stdout
    assert {s: f["results"]["score"] for s, f in student_files(tmp_path / "out").items()} == \
        {s: f["results"]["score"] for s, f in student_files(reference / "jobs").items()}


@extended
@pytest.mark.parametrize("failure, reason", [("FailsForOneStudent", "a simulated fault of the grader"),
                                             ("DiesForOneStudent", "workers died 2 time(s)")])
def test_a_student_whose_task_keeps_failing_is_listed_and_graded_by_the_next_run(reference, tmp_path, monkeypatch,
                                                                                  failure, reason):
    """A grader's fault (retried once), or a worker's death (allowed-failures 1 here, to be quick; one
    student in flight per worker, so that no other student is on the worker that dies)."""
    from autograder.classroom import cluster, node
    from support import failing_node
    from support.failing_node import FAILING_STUDENT
    students = {name: {lesson: reference / "class" / name / f"{lesson}.ipynb" for lesson in LESSONS
                       if (reference / "class" / name / f"{lesson}.ipynb").exists()} for name in STUDENTS}
    out = tmp_path / "out"
    said: list[str] = []
    monkeypatch.setattr(node, "GraderPlugin", getattr(failing_node, failure))
    monkeypatch.setattr(cluster, "ALLOWED_FAILURES", 1)
    monkeypatch.setattr(cluster, "IN_FLIGHT_PER_WORKER", 1)
    results, not_graded = cluster.grade_on_cluster(students, local_workers=2, out_dir=out, show=said.append)
    assert set(not_graded) == {FAILING_STUDENT} and set(results) == set(STUDENTS) - {FAILING_STUDENT}
    assert reason in not_graded[FAILING_STUDENT], not_graded
    assert any(line.startswith(f"NOT GRADED {FAILING_STUDENT}: ") for line in said), said
    assert _written(out) == set(STUDENTS) - {FAILING_STUDENT}
    assert FAILING_STUDENT not in (out / "grades.csv").read_text()
    first = {name: (out / "students" / name / "results.json").stat().st_mtime_ns for name in _written(out)}
    monkeypatch.undo()
    run = run_cli("grade", reference / "class", "--out", out, "--cluster", "local:2")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "cluster: 1 student(s) graded" in run.stdout, run.stdout
    assert {name: (out / "students" / name / "results.json").stat().st_mtime_ns for name in first} == first
    assert (out / "grades.csv").read_bytes() == (reference / "jobs" / "grades.csv").read_bytes()


def test_a_scheduler_that_cannot_be_reached_is_said_and_nothing_is_written(reference, tmp_path, monkeypatch):
    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "2s")    # not Dask's 30 s: nothing listens
    run = run_cli("grade", reference / "class", "--out", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:9")
    assert run.returncode == 2 and "nothing was graded: could not reach the cluster" in run.stderr, run.stderr[-2000:]
    assert not (tmp_path / "out").exists()


@extended
def test_when_no_node_is_left_the_rest_is_listed_and_graded_by_the_next_run(reference, tmp_path, monkeypatch):
    """An existing cluster whose only worker (no nanny to restart it) dies: Dask would keep the
    other students waiting for a node forever; after STALL_SECONDS they are listed as not graded."""
    from autograder.classroom import cluster
    folder = _bigger_class(reference, tmp_path)
    students = {p.name: {nb.stem: nb for nb in p.glob("*.ipynb")} for p in sorted(folder.iterdir())}
    marker = f"AUTOGRADER_TEST_MARK_{uuid.uuid4().hex}"
    scheduler_file = tmp_path / "scheduler.json"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [_start(["-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                     "--no-dashboard", "--scheduler-file", scheduler_file], marker, **quiet)]
    worker = ["-m", "distributed.cli.dask_worker", "--scheduler-file", scheduler_file, "--nthreads", "1",
              "--host", "127.0.0.1", "--no-dashboard", "--no-nanny"]
    try:
        _wait(scheduler_file.exists, 60, "the scheduler")
        procs.append(_start(worker, marker, **quiet))
        address = json.loads(scheduler_file.read_text())["address"]
        monkeypatch.setattr(cluster, "STALL_SECONDS", 4.0)
        said: list[str] = []

        def show(text):              # the worker dies once the first student is written
            said.append(text)
            if text.startswith("sandbox:"):
                procs[1].kill()
        results, not_graded = cluster.grade_on_cluster(students, scheduler=address, out_dir=tmp_path / "out",
                                                       show=show)
        assert results and not_graded and set(results) | set(not_graded) == set(students), (results, not_graded)
        assert all("no node of the cluster could grade for 4 s" in why for why in not_graded.values())
        assert _written(tmp_path / "out") == set(results)
        procs.append(_start(worker, marker, **quiet))          # a node again: the next run grades the rest
        again, missing = cluster.grade_on_cluster(students, scheduler=address, out_dir=tmp_path / "out",
                                                  show=said.append)
        assert not missing and set(again) == set(students)
        assert f"cluster: {len(not_graded)} student(s) graded on 1 node(s)" in said
    finally:
        for proc in procs:
            proc.kill()
            proc.wait(timeout=30)
    assert not _gone(marker), "processes outlived the cluster"


@extended
def test_a_node_whose_sandbox_cannot_start_is_refused_and_named(reference, tmp_path, monkeypatch):
    from autograder.classroom import cluster, node
    from support.failing_node import NoSandboxOnNodeOne
    students = {name: {lesson: reference / "class" / name / f"{lesson}.ipynb" for lesson in LESSONS
                       if (reference / "class" / name / f"{lesson}.ipynb").exists()} for name in STUDENTS}
    monkeypatch.setattr(node, "GraderPlugin", NoSandboxOnNodeOne)
    said: list[str] = []
    results, not_graded = cluster.grade_on_cluster(students, local_workers=2, out_dir=tmp_path / "out",
                                                   show=said.append)
    assert not not_graded and set(results) == set(STUDENTS)
    assert student_files(tmp_path / "out") == student_files(reference / "jobs")
    summary = next(text for text in said if text.startswith("cluster:"))
    assert summary.startswith("cluster: 4 student(s) graded on 1 node(s)"), summary
    refused = [line for line in summary.splitlines() if "REFUSED" in line]
    assert len(refused) == 1 and "its sandbox cannot start: bubblewrap could not create the sandbox" in refused[0], summary


def test_the_course_secret_and_solutions_reach_the_nodes_but_no_students_process(tmp_path):
    """The nodes have the secret (in their environment, as the client has) and solutions/; a
    student's code on a node looks for both and finds neither."""
    secret = uuid.uuid4().hex
    probe = ("def softmax(x, axis=-1):\n    import os\n"
             "    found = [k for k, v in os.environ.items() if v == " + repr(secret) + " or 'SECRET' in k]\n"
             f"    seen = os.path.exists({str(ROOT / 'solutions')!r}) or os.path.exists({str(ROOT / '.course-secret')!r})\n"
             "    raise ValueError(f'environment: {found or \"nothing\"}; course folder seen: {seen}')\n")
    notebook_with(LESSONS[0], {"softmax": probe}, tmp_path / "class" / "eve")
    env = dict(os.environ, PYTHONPATH=str(ROOT), AUTOGRADER_SECRET=secret)
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "class"), "--out",
                          str(tmp_path / "out"), "--cluster", "local:1"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    feedback = (tmp_path / "out" / "students" / "eve" / "feedback.md").read_text()
    assert "environment: nothing; course folder seen: False" in feedback, feedback[:3000]
    assert secret not in feedback and not any(secret in p.read_text(errors="replace")
                                              for p in (tmp_path / "out").rglob("*") if p.is_file())
