"""Shared fixtures: the course's root, one sandbox per test session, and a grading helper."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

# The grader runs PyTorch on one thread (autograder/__main__.py); so do the tests that call it in
# process. With the default thread pool, two test workers on two cores wait on each other's threads.
os.environ["OMP_NUM_THREADS"] = "1"
# nbformat imports jsonschema, whose optional "iri" format checker imports rfc3987_syntax, which builds
# a Lark parser on import: 1.7-2.6 s of processor time in each test worker, for a format that no
# notebook schema uses and no test validates. Without the module jsonschema leaves that format out.
sys.modules.setdefault("rfc3987_syntax", None)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.course import COURSE, available_lessons  # noqa: E402


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def sandbox():
    from autograder.isolate.sandbox import Sandbox
    box = Sandbox()
    yield box
    box.close()


@pytest.fixture(scope="session")
def file_protection(sandbox):
    """The layers that keep student code away from the course's files (never skipped: without
    bubblewrap or Landlock the grader refuses to run, so there is always one)."""
    probe = sandbox.spawn()
    try:
        layers = probe.request("layers", 10)
    finally:
        probe.close()
    assert sandbox.namespaces or any(layer.startswith("Landlock") for layer in layers), layers
    return layers


@pytest.fixture(scope="session")
def grade(sandbox):
    """grade({lesson_id: path}) -> Gradescope results object, graded in-process."""
    from autograder.pipeline import grade_student

    def run(notebooks, time_limit=10.0):
        return grade_student({k: Path(v) for k, v in notebooks.items()}, sandbox, time_limit)
    return run


def run_cli(*args, cwd=ROOT, timeout=600):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)


def once_per_run(tmp_path_factory, name: str, make) -> Path:
    """A folder that `make(folder)` fills, made once per test run: under xdist the first worker that
    asks makes it and the others wait on a lock in the run's shared temporary folder (each worker's
    basetemp is <that folder>/popen-gwN), then read it, so test files on two workers do not build
    the same thing twice. Readers must not change it."""
    import fcntl
    import shutil
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        folder = tmp_path_factory.mktemp(name)
        make(folder)
        return folder
    shared = tmp_path_factory.getbasetemp().parent / "once-per-run"
    shared.mkdir(exist_ok=True)
    folder, done = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():                  # (or the worker that began it failed)
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            done.touch()
    return folder


def graded_once_per_run(tmp_path_factory, course_folder: str):
    """(results, stdout) of `grade <course_folder> --json`, once per test run (once_per_run)."""
    def make(folder):
        run = run_cli("grade", f"{course_folder}/", "--json", folder / "results.json")
        assert run.returncode == 0, run.stderr
        (folder / "stdout").write_text(run.stdout)
    folder = once_per_run(tmp_path_factory, f"grade-{course_folder}", make)
    return json.loads((folder / "results.json").read_text()), (folder / "stdout").read_text()


@pytest.fixture(scope="session")
def kit_dir(tmp_path_factory):
    """The whole student kit (test_student_kit.py, test_kit_secrets.py), built once per test run
    into a folder outside the repository (recorded without the corpus, for speed: the release
    command records the corpus's mistakes too), with the tests' driver beside it."""
    import shutil
    from autograder.deliver import kit

    def make(folder):
        kit.write_kit(folder / "mha-course-kit", corpus=False)
        shutil.copy(ROOT / "tests" / "support" / "kit_driver.py", folder / "mha-course-kit" / "kit_driver.py")
    out = once_per_run(tmp_path_factory, "kit", make) / "mha-course-kit"
    assert not str(out).startswith(str(ROOT))
    return out


@pytest.fixture(scope="session")
def corpus_results(tmp_path_factory) -> dict[str, dict]:
    """{entry name: results} of the whole corpus (tests/corpus/), graded as the accuracy tool grades
    it (accuracy.grade_entries, 2 jobs), once per test run: test_corpus.py judges every entry,
    test_degenerate_09.py reads its entries' scores."""
    from autograder.classroom import accuracy

    def make(folder):
        results = accuracy.grade_entries(accuracy.load(), jobs=2)
        (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    folder = once_per_run(tmp_path_factory, "corpus", make)
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def solutions_results(tmp_path_factory):
    return graded_once_per_run(tmp_path_factory, "solutions")


@pytest.fixture(scope="session")
def lessons_results(tmp_path_factory):
    return graded_once_per_run(tmp_path_factory, "lessons")


def lesson_ids():
    return [lesson.id for lesson in available_lessons()]


def exercise_pairs():
    return [(lesson.id, ex) for lesson in available_lessons() for ex in lesson.exercises]


def notebook_with(lesson_id: str, cells: dict[str, str], folder: Path) -> Path:
    """The released lesson with some graded cells replaced, saved as <folder>/<lesson_id>.ipynb."""
    nb = json.loads(COURSE[lesson_id].released_path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in cells:
            cell["source"] = cells[gid]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lesson_id}.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


# ---------------------------------------------------------------- the `extended` marker (pyproject.toml)

def _names_extended(config) -> bool:
    return "extended" in (config.option.markexpr or "")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test marked `extended` (the heaviest end-to-end runs, which .ci/run runs with `-m extended`)
    is left out of every run whose -m does not name it, and is slow too (never in the quick loop)."""
    left = []
    for item in items:
        if item.get_closest_marker("extended"):
            item.add_marker(pytest.mark.slow)
            if not _names_extended(config):
                left.append(item)
    if left:
        ids = {id(item) for item in left}
        items[:] = [item for item in items if id(item) not in ids]
        config.hook.pytest_deselected(items=left)
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    rank.update({name: len(rank) + 1 + i for i, name in enumerate(LAST)})
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))   # stable: each file's order kept


# Files that take longest, longest first; the rest follow in their usual order, and the notebooks'
# run, which reads what the book's build executed (book.executed_solution's cache), comes last.
# xdist (--dist loadfile) hands whole files to the workers in this order (pyproject's addopts turn
# off its own reordering, by number of tests, which left the 2-test nbgrader file or the book for
# the end of a run, one worker waiting while the other finished them). Seconds alone, -n 0, at
# load 5-7 (fresh clone: the book executes every lesson, ~120 s of it).
LONGEST_FIRST = (
    "test_book.py",                 # 227 (fresh clone)
    "test_student_kit.py",          # 200 (297 with test_kit_secrets.py's tests; the kit 85 of it)
    "test_red_team.py",             # 195
    "test_corpus.py",               # 151
    "test_kit_secrets.py",          # ~100 (the kit tests above build)
    "test_nbgrader_agrees.py",      # 96
    "test_feedback_translation.py",  # 88
    "test_kernel_agreement.py",     # 79
    "test_sandbox_attacks.py",      # 55
    "test_feedback_economy.py",     # 55
    "test_translated_grading.py",   # 39
    "test_gradescope.py",           # 38
    "test_degenerate.py",           # 36
    "test_slow_teardown.py",        # 33
    "test_cli.py",                  # 32
)
LAST = ("test_notebooks_execute.py",)


@pytest.hookimpl(trylast=True)
def pytest_deselected(items):
    """Under xdist the workers collect, so the closing line would not count what they deselected:
    each worker counts it, and the controller adds it to the closing line once (pytest_testnodedown)."""
    config = items[0].config if items else None
    if config is not None and hasattr(config, "workeroutput"):
        config.workeroutput["deselected"] = config.workeroutput.get("deselected", 0) + len(items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    count = getattr(node, "workeroutput", {}).get("deselected", 0)
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if count and reporter is not None and not getattr(node.config, "_deselected_counted", False):
        node.config._deselected_counted = True     # every worker collects (and deselects) the same tests
        reporter.stats.setdefault("deselected", []).extend(SimpleNamespace(nodeid="") for _ in range(count))
