"""Quick grades: a lesson that needs no PyTorch is graded without importing it, in the grader and
in the sandboxed worker; a PyTorch lesson gets it; lesson demos that only train or time are
not run per submission.

Timings live in benchmarks/grade_speed.py; these tests check only what can be seen in a
process's sys.modules, so that a change that brings the imports back fails here.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import COURSE
from autograder.load.notebook import SLOW_TAG, build_program, imported_modules, lesson_imports

ROOT = Path(__file__).resolve().parent.parent
NUMPY_LESSONS = ["01_scaled_dot_product_attention", "02_masking", "04_worked_example"]

# Runs in a fresh interpreter: sets a job up as `grade` does, grades the given notebooks, then
# asks a child of the same worker what the worker had imported.
GRADE_AND_LOOK = r'''
import json, sys
from pathlib import Path
from autograder.classroom import runner
from autograder.pipeline import grade_student
notebooks = {k: Path(v) for k, v in json.loads(sys.argv[1]).items()}
runner._job_init(1024 ** 3, lessons=sorted(notebooks))
box = runner._sandbox
try:
    result = grade_student(notebooks, box)
    child = box.spawn()
    child.request("exec", 20, label="look", source="import sys\ndef modules():\n    return sorted(m for m in "
                  "('torch', 'matplotlib.pyplot', 'IPython.display') if m in sys.modules)\n")
    worker = child.request("call", 20, target=["name", "modules"], args=[], kwargs={}, return_args=False)["result"]
    child.close()
finally:
    box.close()
print(json.dumps({"score": result["score"], "max": result["max_score"], "worker": worker,
                  "loaded": sorted(box.loaded),
                  "grader": sorted(m for m in ("torch", "matplotlib", "IPython") if m in sys.modules)}))
'''


def grade_and_look(notebooks: dict[str, Path]) -> dict:
    run = subprocess.run([sys.executable, "-c", GRADE_AND_LOOK, json.dumps({k: str(v) for k, v in notebooks.items()})],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def _wrong_notebook(lesson: str, folder: Path) -> Path:
    from autograder.classroom import accuracy
    entry = next(e for e in accuracy.load() if e.lesson == lesson and e.expect == "wrong" and e.cells)
    path = folder / entry.name / f"{lesson}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(accuracy.notebook_for(entry), encoding="utf-8")
    return path


def test_numpy_lessons_are_graded_without_torch_in_the_grader_or_the_worker():
    got = grade_and_look({lesson: COURSE[lesson].solution_path for lesson in NUMPY_LESSONS})
    assert got["score"] == got["max"] > 0, got
    assert "torch" not in got["grader"], got
    assert "torch" not in got["worker"] and "torch" not in got["loaded"], got
    # the reference solutions never draw: their setup cells' matplotlib and IPython are deferred
    assert "matplotlib" not in got["grader"] and "IPython" not in got["grader"], got
    # lesson 04's setup cell imports IPython.display: the worker loaded it once, for every child
    assert "IPython.display" in got["worker"] and "IPython" in got["loaded"], got


def test_wrong_numpy_answers_are_diagnosed_without_torch(tmp_path):
    got = grade_and_look({lesson: _wrong_notebook(lesson, tmp_path) for lesson in NUMPY_LESSONS[:2]})
    assert got["score"] < got["max"], got
    assert "torch" not in got["grader"] and "torch" not in got["worker"], got


def test_a_torch_lesson_after_a_numpy_lesson_gets_torch_in_the_same_worker():
    got = grade_and_look({lesson: COURSE[lesson].solution_path
                          for lesson in ("01_scaled_dot_product_attention", "05_multi_head_attention")})
    assert got["score"] == got["max"] > 0, got
    assert "torch" in got["worker"] and "torch" in got["loaded"] and "torch" in got["grader"], got


def test_a_numpy_lesson_that_imports_torch_in_a_cell_of_its_own_gets_it_preloaded(tmp_path):
    nb = json.loads(COURSE["01_scaled_dot_product_attention"].solution_path.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "import torch\nprint(torch.ones(2))"})
    path = tmp_path / "01_scaled_dot_product_attention.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    program = build_program(path, COURSE["01_scaled_dot_product_attention"])
    assert "torch" in program.imports


@pytest.mark.parametrize("lesson", sorted(COURSE))
def test_which_lessons_need_torch(lesson):
    """01, 02 and 04 are NumPy lessons (COURSE_SPEC); every other lesson imports torch in its setup."""
    assert ("torch" in lesson_imports(COURSE[lesson])) == (lesson not in NUMPY_LESSONS)


def test_imported_modules_reads_every_import_form():
    source = ("import numpy as np, torch.nn\nfrom IPython.display import HTML\nfrom . import x\n"
              "def f():\n    import matplotlib.pyplot as plt\n")
    assert imported_modules(source) == {"numpy", "torch", "IPython", "matplotlib"}
    assert imported_modules("def broken(:") == set()


def test_the_reference_defers_display_modules_until_used():
    code = r'''
import sys
from autograder.grading.reference import load_reference
ref = load_reference("01_scaled_dot_product_attention")
before = "matplotlib.pyplot" in sys.modules
x = ref.softmax(__import__("numpy").array([1.0, 2.0]))
ref.plt.figure          # first use: the real module
print(before, "matplotlib.pyplot" in sys.modules, round(float(x.sum()), 6))
'''
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["False", "True", "1.0"]


def _cells(lesson: str) -> list[dict]:
    nb = json.loads(COURSE[lesson].solution_path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _runs(source: str) -> str:
    """The statements a cell runs at its top level, without the bodies of what it only defines."""
    import ast
    tree = ast.parse(source)
    return "\n".join(ast.unparse(node) for node in tree.body
                     if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


@pytest.mark.parametrize("lesson", sorted(COURSE))
def test_training_and_timing_demos_are_slow_demos(lesson):
    """A lesson cell that trains (an optimiser, a `train(` loop) or times code cannot change a
    grade: it is tagged `slow-demo`, so grading does not run it for every submission."""
    for cell in _cells(lesson):
        meta = cell.get("metadata", {})
        if meta.get("nbgrader", {}).get("solution") or "setup" in meta.get("tags", []):
            continue
        runs = _runs("".join(cell["source"]))
        if any(word in runs for word in ("optim", "perf_counter", "time.time(", "train(")):
            assert SLOW_TAG in meta.get("tags", []), (lesson, meta.get("nbgrader", {}).get("grade_id"))


def test_slow_demos_run_in_the_notebook_but_not_when_grading():
    program = build_program(COURSE["06_debugging_projection_reuse"].solution_path, COURSE["06_debugging_projection_reuse"],
                            released=COURSE["06_debugging_projection_reuse"].released_path)
    labels = [c.label for c in program.cells]
    assert "demo_symptom" in labels            # it defines what the student's test may use
    assert "demo_symptom_train" not in labels and "demo_cost" not in labels


@pytest.mark.parametrize("lesson", sorted(COURSE))
def test_slow_demos_define_nothing_the_graded_code_uses(lesson, monkeypatch):
    """Leaving a `slow-demo` cell out cannot change a grade: no graded cell, and no cell a graded
    cell needs, reads a name it binds (the same analysis as a lesson-06 subject's definitions)."""
    from autograder.isolate.submission import definition_cells
    from autograder.load import notebook
    slow = {(c.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
            for c in _cells(lesson) if SLOW_TAG in c.get("metadata", {}).get("tags", [])}
    monkeypatch.setattr(notebook, "SLOW_TAG", "no cell has this tag")   # every cell, as in the notebook
    program = build_program(COURSE[lesson].solution_path, COURSE[lesson], released=COURSE[lesson].released_path)
    assert slow <= {c.label for c in program.cells}
    needed = {c.label for c in definition_cells(program.cells)}
    assert not slow & needed, f"{lesson}: a slow-demo cell defines what graded code uses: {sorted(slow & needed)}"


# ------------------------------------------------------------------ demos whose results nothing reads

def _cell(label, source, kind):
    from autograder.load.notebook import Cell
    return Cell(label, source, kind)


def test_a_demo_is_left_out_only_when_nothing_run_reads_what_it_binds():
    from autograder.load.notebook import idle_demos
    cells = [_cell("setup", "import numpy as np", "setup"),
             _cell("demo_config", "d_model = 8\nscale = 2", "lesson"),          # read by the graded cell
             _cell("demo_helper", "def helper(x):\n    return x * scale", "lesson"),  # read by it too; reads scale
             _cell("f", "def f(x):\n    return helper(x) + d_model", "graded"),
             _cell("demo_show", "out = f(np.ones(3))\nprint(out)", "lesson"),   # binds out: nobody reads it
             _cell("demo_plot", "fig = len(out)", "lesson"),                     # binds fig: the student's cell reads it
             _cell("cell 7", "print(fig)", "scratch"),
             _cell("demo_again", "print(f(1))", "lesson")]                     # binds nothing
    idle = idle_demos(cells)
    assert "demo_config" not in idle and "demo_helper" not in idle   # what the graded code reads, transitively
    assert "demo_plot" not in idle and "demo_show" not in idle       # what the student's own cell reads, transitively
    assert "demo_again" in idle
    without_student = [c for c in cells if c.kind != "scratch"]
    assert idle_demos(without_student) == {"demo_show", "demo_plot", "demo_again"}


def test_every_demo_runs_when_a_cell_cannot_be_analysed():
    from autograder.load.notebook import MAX_PARSED_CELL, idle_demos
    base = [_cell("f", "def f():\n    return 1", "graded"), _cell("demo", "print(f())", "lesson")]
    assert idle_demos(base) == {"demo"}
    assert idle_demos(base + [_cell("cell 3", "def broken(:", "scratch")]) == set()
    assert idle_demos(base + [_cell("cell 3", "x = 1\n" * (MAX_PARSED_CELL // 6 + 1), "scratch")]) == set()
    assert idle_demos([_cell("f", "from helpers import *", "lesson")] + base) == {"demo"}   # star imports always run


class _RecordingChild:
    alive = True

    def __init__(self, ran):
        self.ran = ran

    def request(self, op, timeout, **args):
        if op == "exec":
            self.ran.append(args["label"])
        return None

    def close(self):
        self.alive = False


class _RecordingSandbox:
    def __init__(self):
        self.ran: list[str] = []

    def load(self, extras):
        pass

    def spawn(self, extras=(), subject=False):
        return _RecordingChild(self.ran)


@pytest.mark.parametrize("lesson", sorted(COURSE))
def test_grading_runs_the_cells_the_graded_code_needs_and_no_idle_demo(lesson):
    """Per lesson, on the solutions: every setup and graded cell runs before the last exercise is
    graded, and no demo that nothing reads does (each costs a call of the student's code per
    submission). The solutions still score full marks with them left out (the `solutions_results`
    tests)."""
    from autograder.isolate.submission import Submission
    from autograder.load.notebook import idle_demos
    program = build_program(COURSE[lesson].solution_path, COURSE[lesson], released=COURSE[lesson].released_path)
    idle = idle_demos(program.cells)
    assert idle, f"{lesson}: no demo is left out"
    box = _RecordingSandbox()
    sub = Submission(program, box)
    for exercise in COURSE[lesson].exercises:
        sub.begin_exercise(exercise)
        sub.request("names")
    needed = [c.label for c in program.cells if c.kind in ("setup", "graded")]
    assert set(needed) <= set(box.ran)
    assert not idle & set(box.ran)


# ------------------------------------------------------------------ Dask, for a cluster only

CLUSTER_ONLY = ("dask", "distributed", "autograder.classroom.node", "autograder.classroom.cluster")


def _top_level_imports(path: Path) -> set[str]:
    """Modules a file imports when it is imported (its module body, not its functions' bodies)."""
    import ast
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                break
            if isinstance(sub, ast.Import):
                found |= {alias.name for alias in sub.names}
            elif isinstance(sub, ast.ImportFrom) and sub.module:
                found.add(sub.module)
    return found


def test_only_the_cluster_node_imports_dask_when_imported():
    """dask and distributed cost ~1 s to import: only classroom/node.py imports them at its top, and
    nothing imports node.py or cluster.py at its top (the command line does it for --cluster)."""
    package = ROOT / "autograder"
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        eager = {m.split(".")[0] for m in _top_level_imports(path) if m.split(".")[0] in ("dask", "distributed")} \
            | {m for m in _top_level_imports(path) if m in CLUSTER_ONLY}
        assert eager == ({"distributed"} if name == "classroom/node.py" else set()), (name, eager)


def test_grading_without_a_cluster_never_imports_dask(tmp_path):
    """What a student (or a --jobs class run) pays: Python's own import log of a whole grade."""
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "autograder", "grade",
                          str(COURSE["01_scaled_dot_product_attention"].solution_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr[-3000:]
    imported = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")]
    assert "autograder.pipeline" in imported                    # the log is the grader's
    assert not [m for m in imported if m.split(".")[0] in ("dask", "distributed")], \
        [m for m in imported if m.split(".")[0] in ("dask", "distributed")][:5]
