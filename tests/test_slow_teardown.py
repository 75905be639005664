"""A student whose processes are slow to die never costs a classmate anything, and a worker that
dies is never a student's fault (issue 31, point 1).

The attack: a notebook maps a large region in small pages, touches it, forks a hundred sleeping
children and returns in time. Killed, those processes take seconds to tear down their page
tables. The worker used to give up after ~0.5 s of sweeps and end itself (os._exit), under
whichever classmate it was serving then, who was told they had called sys.exit.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from autograder.course import COURSE
from autograder.isolate import worker as worker_module
from autograder.isolate.processes import _cannot_run_again, _processes, _tree
from autograder.isolate.sandbox import Sandbox
from conftest import run_cli
from test_sandbox_attacks import host_processes_with

L01 = "01_scaled_dot_product_attention"

# ------------------------------------------------------------------------ the sweep, unit level


class _Gone(BaseException):
    """os._exit, caught: the worker would have ended itself."""


@pytest.fixture
def zygote(monkeypatch, tmp_path):
    """A Zygote with one dying child (pid 100, uid 1234) and a fake process table."""
    table: dict[int, tuple[int, int]] = {}
    signalled: list[tuple[int, int]] = []
    as_user: list[int] = []
    monkeypatch.setattr(worker_module, "_processes", lambda: dict(table))
    monkeypatch.setattr(worker_module, "_signal_all", lambda pids, sig: signalled.extend((p, sig) for p in pids))
    monkeypatch.setattr(worker_module, "_kill_as_users", as_user.extend)
    monkeypatch.setattr(worker_module.os, "_exit", lambda code: (_ for _ in ()).throw(_Gone(code)))
    z = worker_module.Zygote([])
    scratch = tmp_path / "s-dying"
    scratch.mkdir()
    z.dying[100] = {"uid": None, "uid_taken": 1234, "scratch": str(scratch), "owner": 0}
    z.uid_mode = False
    return z, table, signalled, as_user, scratch


def test_a_child_slow_to_disappear_is_waited_for_not_given_up(zygote, monkeypatch):
    """Killed processes that take far longer than the old limit (500 passes) to vanish keep the
    child dying, its uid taken and its scratch folder in place, and the worker serving; once
    they are gone, all is released."""
    z, table, signalled, _, scratch = zygote
    table.update({100: (os.getpid(), 1234), 101: (100, 1234)})
    monkeypatch.setattr(worker_module, "_cannot_run_again", lambda pid: bool(signalled))
    for _ in range(5 * worker_module.MAX_CHASES):
        z.sweep()
    assert z.dying and scratch.exists(), "released while its processes were still there"
    assert z.pause == worker_module.SWEEP_AT_MOST, "a child that can only be waited for is still swept every ms"
    assert {p for p, _ in signalled} == {100, 101}
    assert len(signalled) == 4, "processes that can never run again were signalled again and again"
    table.clear()
    z.sweep()
    assert not z.dying and not scratch.exists()


def test_a_chain_of_forks_that_outruns_the_sweep_is_killed_by_uid(zygote, monkeypatch):
    """Where children have uids of their own, a process that each pass finds still able to run
    (a fork chain) is ended by kill(-1) as its uid, never by the worker ending itself."""
    z, table, _, as_user, _ = zygote
    z.uid_mode = True
    table.update({100: (os.getpid(), 1234)})
    monkeypatch.setattr(worker_module, "_cannot_run_again", lambda pid: False)
    for _ in range(3 * worker_module.MAX_CHASES):
        z.sweep()
    assert as_user and set(as_user) == {1234}


def test_without_uids_only_a_chain_that_outruns_every_pass_ends_the_worker(zygote, monkeypatch):
    """The last resort, kept where children share the worker's uid: MAX_CHASES passes in a row
    that each find a process still able to run (in bubblewrap the PID namespace then takes all of
    it; the grader regrades what it was serving). A pass in between that finds only dying
    processes starts the count again."""
    z, table, _, _, _ = zygote
    table.update({100: (os.getpid(), 1234)})
    able = {"now": True}
    monkeypatch.setattr(worker_module, "_cannot_run_again", lambda pid: not able["now"])
    for n in range(3 * worker_module.MAX_CHASES):
        z.sweep()
        if n % 100 == 99:   # one pass that finds only dying processes
            able["now"] = False
            z.sweep()
            able["now"] = True
    with pytest.raises(_Gone):
        for _ in range(worker_module.MAX_CHASES):
            z.sweep()


def test_processes_that_hop_pids_are_chased_not_waited_for(zygote, monkeypatch):
    """A process first seen already exiting may have forked after the scan (fork, then exit: a
    new pid each time): each pass that finds one counts as a chase, so without uids such a chain
    still ends the worker (and its PID namespace) instead of running on while it is "waited for"."""
    z, table, _, _, _ = zygote
    monkeypatch.setattr(worker_module, "_cannot_run_again", lambda pid: True)
    me = os.getpid()
    with pytest.raises(_Gone):
        for hop in range(2 * worker_module.MAX_CHASES):
            table.clear()
            table[200 + hop] = (me, 1234)   # re-parented to the worker: a stray
            z.sweep()
    assert hop + 1 == worker_module.MAX_CHASES


def test_cannot_run_again_tells_a_live_process_from_a_dying_one():
    sleeper = subprocess.Popen(["sleep", "30"])
    zombie = subprocess.Popen(["true"])
    try:
        deadline = time.monotonic() + 5
        while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert not _cannot_run_again(sleeper.pid)
        assert _cannot_run_again(zombie.pid)
        os.kill(sleeper.pid, signal.SIGSTOP)
        assert not _cannot_run_again(sleeper.pid), "a stopped process can run again once continued"
    finally:
        sleeper.kill()
        sleeper.wait()
        zombie.wait()
    assert _cannot_run_again(sleeper.pid)


# ---------------------------------------------------------------------- a dead worker, mid-request

def _worker_pid(box: Sandbox) -> int:
    if not box.namespaces:
        return box._proc.pid
    table = _processes()
    return min(p for p in _tree(box._proc.pid, table) if table[p][0] == box._proc.pid)


@pytest.mark.slow
def test_a_worker_that_dies_mid_request_is_the_graders_fault_not_an_exit(tmp_path):
    """The worker is killed while it serves a correct notebook (its softmax cell is running): that
    is SandboxBroken, the student is regraded with a fresh worker and gets full marks, never
    `process-exit` (the old grader said the cell had called sys.exit and gave 0 for softmax)."""
    from autograder.pipeline import grade_student
    marker = f"autograder-midrequest-{uuid.uuid4().hex}"
    nb = json.loads(COURSE[L01].solution_path.read_text())
    cell = next(c for c in nb["cells"] if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softmax")
    cell["source"] = ("import os, sys, time\nif os.fork() == 0:\n    os.execv(sys.executable, [sys.executable, '-S', '-c', "
                      f"'import time; time.sleep(60)', {marker!r}])\ntime.sleep(3)\n" + "".join(cell["source"]))
    (tmp_path / f"{L01}.ipynb").write_text(json.dumps(nb))
    box = Sandbox()
    killed = []

    def kill_the_worker_once():   # once the cell runs: it started a process that carries the marker
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if host_processes_with(marker):
                killed.append(_worker_pid(box))
                os.kill(killed[0], signal.SIGKILL)
                return
            time.sleep(0.01)

    box.check()
    killer = threading.Thread(target=kill_the_worker_once, daemon=True)
    killer.start()
    try:
        result = grade_student({L01: tmp_path / f"{L01}.ipynb"}, box)
    finally:
        box.close()
    killer.join(5)
    assert killed, "the worker was never killed: the test did not test anything"
    outputs = "\n".join(t.get("output", "") for t in result["tests"])
    assert "process-exit" not in json.dumps(result) and "sys.exit" not in outputs, outputs
    assert result["score"] == result["max_score"] > 0, outputs


# ---------------------------------------------------------------------------- the class attack

# Sized so that on this course's machines the killed processes take several seconds to go (the
# old worker gave up after ~0.5-3 s of passes), while each cell returns well within its 10 s.
ATTACK_MB, ATTACK_CELLS, FORKS_PER_CELL = 1500, 6, 25
MAP = f'''import mmap
_SIZE = {ATTACK_MB} * 1024 ** 2
_region = mmap.mmap(-1, _SIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
_region.madvise(mmap.MADV_NOHUGEPAGE)   # small pages: millions of entries to tear down per process
for _i in range(0, _SIZE, 4096):
    _region[_i] = 1
'''
FORK = f'''import os, time
for _ in range({FORKS_PER_CELL}):
    if os.fork() == 0:
        while True:
            time.sleep(100)
'''


@pytest.mark.slow
def test_a_worker_keeps_serving_while_a_childs_processes_take_seconds_to_die():
    """The attack in one child, ended; a classmate's child is served all the while the killed
    processes are taken apart (seconds), and the worker is the same one at the end. The old
    worker ended itself ~0.5-4 s in, under the classmate's request."""
    box = Sandbox(memory_bytes=2 * 1024 ** 3)
    try:
        box.check()
        worker = _worker_pid(box)
        attacker = box.spawn()
        attacker.request("exec", 120, label="attack", source=MAP + FORK.replace(
            f"range({FORKS_PER_CELL})", f"range({ATTACK_CELLS * FORKS_PER_CELL})"))
        attack = set(_tree(worker, _processes())) - {worker}
        assert len(attack) > ATTACK_CELLS * FORKS_PER_CELL, "the attack did not fork"
        attacker.close()
        ended = time.monotonic()
        classmate = box.spawn()
        served = 0
        while any(os.path.exists(f"/proc/{pid}") for pid in attack):
            assert time.monotonic() - ended < 600, "the attack's processes never went"
            classmate.request("exec", 10, label="work", source="import numpy as np\nx = np.ones((200, 200)) @ np.ones((200, 200))\n")
            served += 1
        teardown = time.monotonic() - ended
        classmate.request("exec", 10, label="after", source="y = 1\n")
        classmate.close()
        assert _worker_pid(box) == worker, "the worker was replaced"
        print(f"teardown {teardown:.1f} s, {served} requests served meanwhile")
        assert teardown > 0.5, f"the killed processes went in {teardown:.2f} s: too fast to test anything here"
    finally:
        box.close()


def _code_cell(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": source}


def _attacker_notebook() -> str:
    nb = json.loads(COURSE[L01].solution_path.read_text())
    first_code = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    nb["cells"][first_code + 1:first_code + 1] = [_code_cell(MAP)] + [_code_cell(FORK)] * ATTACK_CELLS
    return json.dumps(nb)


def _class_with_an_attacker(folder: Path) -> None:
    for student in ("a_attacker", "b_classmate", "c_classmate", "d_classmate"):
        for lesson in COURSE.values():
            target = folder / student / f"{lesson.id}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(lesson.solution_path.read_text())
    (folder / "a_attacker" / f"{L01}.ipynb").write_text(_attacker_notebook())


@pytest.mark.extended     # a class of four full courses, graded twice: .ci/run runs it (-m extended)
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_slow_teardown_costs_no_classmate_a_point(tmp_path, jobs):
    _class_with_an_attacker(tmp_path / "class")
    run = run_cli("grade", tmp_path / "class", "--json", tmp_path / "r.json", "--jobs", jobs, timeout=1200)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads((tmp_path / "r.json").read_text())
    for student in ("b_classmate", "c_classmate", "d_classmate"):
        lost = [(t["name"], t["output"][:300]) for t in results[student]["tests"] if t["score"] < t["max_score"]]
        assert results[student]["score"] == results[student]["max_score"] > 0, (student, lost)
        assert "broke down" not in results[student].get("output", "")
    # the attack itself ran, each cell in time (none skipped), and its own lessons are graded
    # like the reference
    attacker = results["a_attacker"]
    assert "was skipped" not in attacker.get("output", ""), attacker.get("output")
    assert attacker["score"] == attacker["max_score"], [t["name"] for t in attacker["tests"] if t["score"] < t["max_score"]]
