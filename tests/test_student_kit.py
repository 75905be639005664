"""The student kit (`python -m autograder release --student-kit OUT`) and hidden grading inputs.

The kit is built once per test run (conftest.kit_dir), outside the repository, and its self-checks run in a separate
`python -I` process that can import only the kit's autograder (the repository's editable install
switched off): correct answers get full marks, the stubs none, and a typical mistake per lesson
gets the same verdict, word for word, as the course's full self-check. The kit holds no line of
any solution cell and cannot answer a question it was not asked at release. With a course secret
grading draws other inputs, so answers looked up in the kit's recordings earn nothing there.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.deliver import kit
from autograder.course import COURSE, available_lessons
from conftest import ROOT, notebook_with

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop

LESSONS = [lesson.id for lesson in available_lessons()]
DRIVER = ROOT / "tests" / "support" / "kit_driver.py"
SECRET = "a course secret for the tests"

# One typical mistake per lesson: (lesson, grade_id, text in the solution cell, replacement, mistake id).
MISTAKES = [
    ("01_scaled_dot_product_attention", "scaled_dot_product_attention", " / np.sqrt(d_k)", "", "missing-scale"),
    ("02_masking", "causal_mask", "return key <= query", "return key < query", "causal-off-by-one"),
    ("03_self_attention_head", "SelfAttentionHead", "self.w_k(x), self.w_v(x)", "self.w_q(x), self.w_v(x)",
     "kv-reuse-query-projection"),
    ("04_worked_example", "worked_example", "scores = q @ k.T / np.sqrt(D_K)", "scores = q @ k.T", "missing-scale"),
    ("05_multi_head_attention", "MultiHeadAttention", "return self.w_o(merge_heads(weights @ v))",
     "return merge_heads(weights @ v)", "missing-output-projection"),
    ("06_debugging_projection_reuse", "FixedMultiHeadAttention", "k = self.k_project(x)", "k = self.q_project(x)",
     "kv-reuse-query-projection"),
    ("07_transformer_block", "positional_encoding", "pe[:, 0::2] = torch.sin(angles)",
     "pe[:, 0::2] = torch.cos(angles)", None),
    ("08_fast_attention", "repeat_kv", "x = x[:, :, None].expand(B, h_kv, n_rep, T, d_k)",
     "return x.repeat(1, n_rep, 1, 1)", "kv-repeat-order"),
    ("09_generating_text", "next_token_probs", "before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs",
     "before = torch.cumsum(sorted_probs, dim=-1)", "top-p-drops-threshold-token"),
    ("10_flash_attention", "combine_attention", "np.logaddexp(lse1, lse2)", "np.log(np.exp(lse1) + np.exp(lse2))",
     "lse-unstable"),
]


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def solution_cells(lesson: str) -> dict[str, str]:
    return {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in code_cells(COURSE[lesson].solution_path)
            if c["metadata"].get("nbgrader", {}).get("solution")}


def run_cells(lesson: str, replace: dict[str, str]) -> list[str]:
    """The released lesson's code cells up to its last self-check, graded cells replaced. Cells
    tagged `slow-demo` (training runs, timings) are left out, as the grader leaves them out: no
    check reads what they make, and lesson 09's training alone would cost ~40 s per run here
    (tests/test_notebooks_execute.py runs every cell of every lesson)."""
    cells = code_cells(COURSE[lesson].released_path)
    last = max(i for i, c in enumerate(cells) if c["metadata"].get("nbgrader", {}).get("grade"))
    return [replace.get(c["metadata"].get("nbgrader", {}).get("grade_id"), "".join(c["source"]))
            for c in cells[:last + 1] if "slow-demo" not in c["metadata"].get("tags", [])]


def points(lesson: str) -> dict[str, float]:
    """{exercise: points of its self-check cell}."""
    found = {}
    for c in code_cells(COURSE[lesson].solution_path):
        md = c["metadata"].get("nbgrader", {})
        m = re.search(r'check\("([^"]+)"', "".join(c["source"]))
        if md.get("grade") and m:
            found[m.group(1)] = float(md["points"])
    return found


def mistaken(lesson, grade_id, old, new):
    cells = solution_cells(lesson)
    assert old in cells[grade_id], f"{lesson}/{grade_id}: the solution no longer contains {old!r}"
    return dict(cells, **{grade_id: cells[grade_id].replace(old, new, 1)})


def drive(root: Path, runs: list[dict], tmp: Path, env_extra=None) -> dict:
    """Run the driver with `root`'s autograder, isolated (-I), from `root`."""
    plan, out = tmp / f"plan-{root.name}.json", tmp / f"out-{root.name}.json"
    plan.write_text(json.dumps({"root": str(root), "runs": runs}))
    driver = root / "kit_driver.py" if (root / "kit_driver.py").exists() else DRIVER
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AUTOGRADER"))}
    env.update({"AUTOGRADER_SECRET_FILE": str(tmp / "no-secret"), "MPLBACKEND": "Agg", **(env_extra or {})})
    run = subprocess.run([sys.executable, "-I", str(driver), str(plan), str(out)], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(out.read_text())


def text_files(folder: Path) -> dict[str, str]:
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix == ".mo":      # a compiled catalog: its texts, each on its lines
            import gettext
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog
            found[path.relative_to(folder).as_posix()] = "\n".join(
                str(text) for pair in catalog.items() for text in pair)
        elif path.is_file() and path.suffix == ".pt":    # lesson 09's weights: their names and texts
            import torch
            saved = torch.load(path, weights_only=True)
            found[path.relative_to(folder).as_posix()] = "\n".join(
                [*saved, *saved["model"], *(v for v in saved.values() if isinstance(v, str))])
        elif path.is_file() and path.suffix != ".npz":
            found[path.relative_to(folder).as_posix()] = path.read_text(encoding="utf-8")
    return found


# lines of solution cells that say nothing about any answer (the checks and messages use them too)
GENERIC = {"if mask is None:", "if mask is not None:", "d_k = q.shape[-1]"}


def solution_lines() -> set[str]:
    """Every non-trivial line between BEGIN/END SOLUTION markers that the released lessons do not show."""
    released = "\n".join(COURSE[lid].released_path.read_text(encoding="utf-8") for lid in LESSONS)
    lines = set()
    for lid in LESSONS:
        for source in solution_cells(lid).values():
            for region in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.S):
                for line in region.splitlines():
                    code = line.split("  #")[0].strip()
                    if len(code) >= 12 and not code.startswith("#") and code not in GENERIC \
                            and json.dumps(code)[1:-1] not in released:
                        lines.add(code)
    return lines


# What a student's kernel imports, and so what the kit carries besides the lessons' check modules.
SELF_CHECK_MODULES = [
    "__init__.py", "course.py", "i18n.py", "selfcheck.py", "locale/zh_CN/LC_MESSAGES/feedback.mo",
    "checks/__init__.py", "checks/generation_subjects.py", "checks/projection_subjects.py", "checks/pytest.ini",
    "diagnose/__init__.py", "diagnose/mistakes.py", "diagnose/root_cause.py",
    "grading/__init__.py", "grading/checking.py", "grading/compare.py", "grading/differences.py",
    "grading/independence.py",
    "grading/parameters.py",
    "grading/plugin.py", "grading/recorded.py", "grading/reference.py", "grading/student.py",
    "grading/tolerances.py",
    "load/__init__.py", "load/kernel_state.py", "load/notebook.py", "load/reading.py",
    "report/__init__.py", "report/files.py", "report/results.py",
    "run/__init__.py", "run/bounds.py", "run/errors.py", "run/executor.py", "run/substitute.py",
    "run/wire.py",
]


def test_kit_layout(kit_dir):
    names = {p.relative_to(kit_dir).as_posix() for p in kit_dir.rglob("*") if p.is_file()}
    assert {"README.md", "requirements.txt", "autograder/records/index.json", "autograder/records/arrays.npz"} <= names
    assert {f"lessons/{lid}.ipynb" for lid in LESSONS} <= names
    assert {"data/sums/train.txt", "data/sums/test.txt", "data/sums/tinygpt.pt"} <= names   # lesson 09's data
    for lid in LESSONS:    # the released notebooks, byte for byte
        assert (kit_dir / "lessons" / f"{lid}.ipynb").read_bytes() == COURSE[lid].released_path.read_bytes()
    assert not any(n.startswith(("solutions/", "tests/", ".git")) for n in names)
    # exactly the self-check's import closure: no sandbox, class run, delivery or fingerprint module
    modules = sorted(n for n in names if n.startswith("autograder/") and not n.startswith("autograder/records/"))
    assert modules == sorted(["autograder/" + m for m in SELF_CHECK_MODULES + [
        f"checks/test_{lid}.py" for lid in LESSONS]]), modules
    requirements = (kit_dir / "requirements.txt").read_text()
    assert "torch==2.13.0" in requirements and "download.pytorch.org/whl/cpu" in requirements
    assert "-e ." not in requirements and "nbgrader" not in requirements
    readme = (kit_dir / "README.md").read_text()
    for step in ("pip install -r requirements.txt", "jupyter lab lessons/", "Self-check", "Submit"):
        assert step in readme


def test_kit_holds_no_solution_line(kit_dir, tmp_path):
    lines = solution_lines()
    assert len(lines) > 60          # the search is not vacuous
    files = text_files(kit_dir)
    leaks = [(name, line) for name, text in files.items() for line in lines if line in text]
    assert not leaks, leaks[:10]
    # the search finds a line that is there
    planted = tmp_path / "planted"
    shutil.copytree(kit_dir / "autograder", planted)
    (planted / "extra.py").write_text(sorted(lines)[0] + "\n")
    assert any(line in text for text in text_files(planted).values() for line in lines)


def test_no_kit_file_shows_another_lessons_answer(kit_dir):
    """No lesson of the kit shows a line of another lesson's answer, and its other files show none
    that the answer's own lesson does not (the search above leaves out every line any released
    lesson shows, so it missed lesson 09's model answering lesson 08)."""
    from support.answers import BY_DESIGN, foreign_answers, lines_of
    files = text_files(kit_dir)
    public = {lid: lines_of(files[f"lessons/{lid}.ipynb"]) for lid in LESSONS}
    shown = []
    for name, text in files.items():
        own = Path(name).stem if name.startswith("lessons/") else None
        shown += [(name, lid, line) for lid, line in foreign_answers(text, own)
                  if (own, lid) not in BY_DESIGN and (own is not None or line not in public[lid])]
    assert not shown, shown[:10]


def test_kit_cannot_answer_new_questions(kit_dir, tmp_path):
    """Nothing in the kit computes an answer: fresh inputs to the reference, the mutant engine and
    reference_output are refused; the kit's own modules import no mutant engine or reference."""
    script = tmp_path / "probe.py"
    script.write_text(f"""
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path.insert(0, {str(kit_dir)!r})
import numpy as np, torch
from autograder.grading import checking
from autograder.grading import recorded
from autograder.grading.reference import load_reference
q = np.random.default_rng(12345).standard_normal((2, 3, 4))
refused = 0
for ask in (lambda: load_reference("01_scaled_dot_product_attention").scaled_dot_product_attention(q, q, q),
            lambda: load_reference("01_scaled_dot_product_attention").softmax(q),
            lambda: load_reference("02_masking").causal_mask(37),
            lambda: recorded.mutants.np_attention(q, q, q),
            lambda: recorded.mutants.torch_mha({{}}, torch.zeros(1, 2, 4), torch.zeros(1, 2, 4), torch.zeros(1, 2, 4), h=2),
            lambda: checking.reference_output(load_reference("05_multi_head_attention").MultiHeadAttention,
                                              (4, 2), {{}}, torch.zeros(1, 2, 4), torch.zeros(1, 2, 4), torch.zeros(1, 2, 4))):
    try:
        ask()
    except recorded.NotRecorded as err:
        assert "not in the recorded self-check data" in str(err)
        refused += 1
assert refused == 6, refused
import autograder.checks.projection_subjects as subjects
assert "multi_head_attention_forward" in open(subjects.__file__).read()
bad = [m for m in sys.modules if m.startswith("autograder") and m.split(".")[-1] in ("mutants", "kit", "accuracy")]
assert not bad, bad
print("ok")
""")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AUTOGRADER"))}
    run = subprocess.run([sys.executable, "-I", str(script)], cwd=kit_dir, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]
    for path in (kit_dir / "autograder").rglob("*.py"):   # no engine left behind under another name
        text = path.read_text()
        assert "def np_attention" not in text and "def torch_mha" not in text and "load_reference(lesson" not in text \
            or path.name == "recorded.py", path


def test_kit_self_checks_grade_like_the_course(kit_dir, tmp_path):
    """Correct answers: full marks; stubs: 0; one typical mistake per lesson: the full self-check's verdict."""
    runs = []
    for lid in LESSONS:
        runs.append({"name": f"{lid}:correct", "lesson": lid, "cells": run_cells(lid, solution_cells(lid))})
        runs.append({"name": f"{lid}:stub", "lesson": lid, "cells": run_cells(lid, {})})
    wrong = [{"name": f"{lid}:mistake", "lesson": lid, "cells": run_cells(lid, mistaken(lid, gid, old, new))}
             for lid, gid, old, new, _ in MISTAKES]
    ours = drive(kit_dir, runs + wrong, tmp_path)
    assert ours["autograder"] == str(kit_dir / "autograder")
    assert "autograder.grading.recorded" in ours["modules"] and "autograder.diagnose.fingerprints" not in ours["modules"]
    full = drive(ROOT, wrong, tmp_path)            # the course's own self-check, with the reference
    assert full["autograder"] == str(ROOT / "autograder")
    for lid in LESSONS:
        want = points(lid)
        correct = [c for c in ours["runs"][f"{lid}:correct"] if "exercise" in c]
        assert {c["exercise"]: c["score"] for c in correct} == want, ours["runs"][f"{lid}:correct"]
        stub = [c for c in ours["runs"][f"{lid}:stub"] if "exercise" in c]
        assert {c["exercise"] for c in stub} == set(want) and all(c["score"] == 0 for c in stub)
        assert all(c["verdict"] == f"{c['exercise']}: 0/{want[c['exercise']]:g} points. Not started: replace "
                   "`raise NotImplementedError()` with your code\n" for c in stub), stub      # one line each
    for lid, gid, _, _, mistake in MISTAKES:
        kit_checks = {c["exercise"]: c for c in ours["runs"][f"{lid}:mistake"] if "exercise" in c}
        course_checks = {c["exercise"]: c for c in full["runs"][f"{lid}:mistake"] if "exercise" in c}
        assert kit_checks[gid]["score"] < points(lid)[gid]
        assert kit_checks[gid]["verdict"] == course_checks[gid]["verdict"], (lid, kit_checks[gid]["verdict"])
        assert kit_checks[gid]["score"] == course_checks[gid]["score"]
        if mistake:
            assert f"[{mistake}]" in kit_checks[gid]["verdict"]


def test_kit_is_deterministic_and_atomic(tmp_path):
    lessons = ["02_masking", "04_worked_example", "07_transformer_block"]
    a, b = kit.write_kit(tmp_path / "a.zip", lessons, corpus=False), kit.write_kit(tmp_path / "b.zip", lessons, corpus=False)
    assert a.read_bytes() == b.read_bytes()
    folder = kit.write_kit(tmp_path / "kit", lessons, corpus=False)
    kit.write_kit(folder, lessons, corpus=False)           # rebuilt over itself
    with zipfile.ZipFile(a) as zf:
        assert sorted(zf.namelist()) == sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        assert all(zf.read(n) == (folder / n).read_bytes() for n in zf.namelist())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip", "b.zip", "kit"]   # no temporary left behind


def nbgrader(course, *args, env_extra=None):
    # no PYTHONPATH: a kernel (generate_assignment's) imports the autograder/ beside the notebook (the
    # kit) before any installed copy, as on a student's machine; nbgrader_config.py brings in the course
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MPLBACKEND")}
    env.update(env_extra or {})
    run = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def test_nbgrader_releases_the_kit_and_grades_with_the_course(kit_dir, tmp_path):
    """nbgrader's flow: the assignment's source folder holds the lesson and the kit's autograder/;
    students get the kit's self-check (no reference), and `nbgrader autograde`, configured with
    deliver/nbgrader_grades.py, grades in the sandbox with the course's own checks and secret, as
    `grade` does (no kernel runs the student's notebook)."""
    from nbgrader.api import Gradebook
    lesson = "01_scaled_dot_product_attention"
    course = tmp_path / "course"
    source = course / "source" / "l01"
    source.mkdir(parents=True)
    shutil.copy(COURSE[lesson].solution_path, source)
    shutil.copytree(kit_dir / "autograder", source / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    from test_nbgrader_agrees import NBGRADER_CONFIG
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(course), course=str(ROOT)))
    nbgrader(course, "db", "assignment", "add", "l01")
    nbgrader(course, "generate_assignment", "l01", "--force")
    released = course / "release" / "l01"
    lines = solution_lines()
    assert not [line for text in text_files(released).values() for line in lines if line in text]
    assert (released / "autograder" / "grading" / "recorded.py").exists()
    assert not (released / "autograder" / "diagnose" / "fingerprints").exists()
    assert {p.relative_to(released / "autograder") for p in (released / "autograder").rglob("*") if p.is_file()} \
        == {p.relative_to(kit_dir / "autograder") for p in (kit_dir / "autograder").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
    partial = json.loads((released / f"{lesson}.ipynb").read_text())
    for cell in partial["cells"]:       # softmax right, attention without its scale
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in ("softmax", "scaled_dot_product_attention"):
            cell["source"] = mistaken(lesson, *MISTAKES[0][1:4])[gid]
    cheat = json.loads((released / f"{lesson}.ipynb").read_text())
    for cell in cheat["cells"]:         # softmax answered from the kit's recordings
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid == "softmax":           # (not in the setup cell: nbgrader restores locked cells)
            cell["source"] = (f"from autograder import recorded as _r\n_R = _r.Replay('reference:{lesson}')\n\n"
                              "def softmax(x, axis=-1):\n    try:\n        return _R.softmax(x)\n"
                              "    except _r.NotRecorded:\n        return _R.softmax(x, axis=axis)\n")
    # the cheat earns softmax's points from the kit's self-check (see lookup_submission), none here
    submissions = {"partial": json.dumps(partial), "cheat": json.dumps(cheat)}
    for name, text in submissions.items():
        folder = course / "submitted" / name / "l01"
        folder.mkdir(parents=True)
        (folder / f"{lesson}.ipynb").write_text(text)
    hidden = {"AUTOGRADER_SECRET": SECRET}
    nbgrader(course, "autograde", "l01", "--force", "--create", env_extra=hidden)
    env_run = dict(os.environ, AUTOGRADER_SECRET=SECRET)
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(course / "submitted"), "--json",
                          str(tmp_path / "ours.json")], cwd=ROOT, env=dict(env_run, PYTHONPATH=str(ROOT)),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    ours = json.loads((tmp_path / "ours.json").read_text())
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        theirs = {s: (gb.find_submission("l01", s).score, gb.find_submission("l01", s).max_score) for s in submissions}
    for name in submissions:
        assert theirs[name] == (ours[name]["score"], ours[name]["max_score"]), (name, theirs, ours[name])
    assert theirs["partial"][1] > theirs["partial"][0] > 0 == theirs["cheat"][0]


@pytest.mark.extended     # a virtual environment and a Jupyter kernel of its own: .ci/run runs it (-m extended)
def test_kit_runs_its_own_grader_beside_an_installed_course(tmp_path, monkeypatch):
    """A virtual environment made with --system-site-packages where the course is installed
    (`pip install -e .`, as requirements.txt does): a kit notebook run in a Jupyter kernel of that
    environment, from the kit's lessons/, imports the kit's autograder, not the installed course's,
    says so in its setup cell, and a correct answer gets full marks. A package named `autograder`
    installed in the environment itself (one from PyPI, say) does not win either."""
    import nbformat
    from nbclient import NotebookClient
    lesson = "01_scaled_dot_product_attention"
    out = kit.write_kit(tmp_path / "kit", [lesson], corpus=False)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AUTOGRADER", "JUPYTER", "MPLBACKEND"))}
    where = subprocess.run([str(python), "-c", "import autograder; print(autograder.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True)
    installed = Path(where.stdout.strip())     # what `import autograder` finds in this environment
    assert where.returncode == 0 and installed.name == "__init__.py" and out not in installed.parents, \
        f"the course is not installed in this environment, so the test proves nothing: {where.stderr[-500:]}"

    spec = tmp_path / "jupyter" / "kernels" / "kitvenv"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "kit venv", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    nb = nbformat.read(str(out / "lessons" / f"{lesson}.ipynb"), as_version=4)
    answers = solution_cells(lesson)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
        elif "slow-demo" in cell.metadata.get("tags", []):
            cell.source = ""
    nb.cells.append(nbformat.v4.new_code_cell("import autograder; print(autograder.__file__)"))
    client = NotebookClient(nb, timeout=300, kernel_name="kitvenv", allow_errors=True,
                            resources={"metadata": {"path": str(out / "lessons")}})
    client.execute(env=env)

    def printed(cell):
        return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")

    assert printed(nb.cells[-1]).strip() == str(out / "autograder" / "__init__.py")
    setup = next(c for c in nb.cells if "setup" in c.metadata.get("tags", []))
    assert printed(setup).strip() == "Self-checks: ../autograder (student kit 1.0.0)", setup.outputs
    scores = {c.metadata["nbgrader"]["grade_id"]: float(o["data"]["text/plain"]) for c in nb.cells
              if "self-check" in c.metadata.get("tags", []) for o in c.outputs if o.output_type == "execute_result"}
    assert scores == {f"check_{ex}": pts for ex, pts in points(lesson).items()}, \
        [(c.source, c.outputs) for c in nb.cells if "self-check" in c.metadata.get("tags", [])]

    # a package named `autograder` in the environment's own site-packages (it comes before the
    # system's on sys.path): the setup cell still imports the kit's
    impostor = next((venv / "lib").glob("python3*/site-packages")) / "autograder"
    impostor.mkdir()
    (impostor / "__init__.py").write_text("raise ImportError('the impostor was imported')\n")
    run = subprocess.run([str(python), "-c", setup.source + "\nimport autograder; print(autograder.__file__)"],
                         cwd=out / "lessons", env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.splitlines() == ["Self-checks: ../autograder (student kit 1.0.0)",
                                       str(out / "autograder" / "__init__.py")]


# Issue 32: every exercise that calls another graded name of the lesson (found in the solution cells),
# with that helper as the unchanged stub and as a wrong answer: (lesson, exercise, helper, wrong source)
WRONG_HELPERS = {
    ("01_scaled_dot_product_attention", "scaled_dot_product_attention", "softmax"):
        "def softmax(x, axis=-1):\n    e = np.exp(x - np.max(x, axis=0, keepdims=True))\n"
        "    return e / np.sum(e, axis=0, keepdims=True)\n",
    # every value off by one, so that published_errors() finds another set (the lesson's missing-scale
    # leaves the set of published errors as it is: published_errors is then right on its own)
    ("04_worked_example", "published_errors", "worked_example"):
        ("    return result\n", "    return {key: value + 1.0 for key, value in result.items()}\n"),
    ("05_multi_head_attention", "MultiHeadAttention", "split_heads"):
        "def split_heads(x, num_heads):\n    B, T, d = x.shape\n    return x.reshape(B, num_heads, T, d // num_heads)\n",
    ("05_multi_head_attention", "MultiHeadAttention", "merge_heads"):
        "def merge_heads(x):\n    B, h, T, d = x.shape\n    return x.reshape(B, T, h * d)\n",
    ("08_fast_attention", "CausalSelfAttention", "repeat_kv"):
        "def repeat_kv(x, n_rep):\n    return x.repeat(1, n_rep, 1, 1)\n",
    ("09_generating_text", "generate", "next_token_probs"): None,      # drops the top-p threshold token (MISTAKES)
    ("10_flash_attention", "flash_attention", "combine_attention"):
        "def combine_attention(out1, lse1, out2, lse2):\n    return (out1 + out2) / 2, np.maximum(lse1, lse2)\n",
}


def helper_pairs() -> set[tuple[str, str, str]]:
    """(lesson, exercise, helper): a solution cell that calls another graded name of its lesson."""
    found = set()
    for lid in LESSONS:
        cells = solution_cells(lid)
        for exercise, source in cells.items():
            code = re.sub(r'""".*?"""', "", source, flags=re.S)
            found |= {(lid, exercise, other) for other in COURSE[lid].exercises
                      if other != exercise and re.search(rf"\b{other}\s*\(", code)}
    return found


def test_every_helper_pair_is_tested():
    pairs = helper_pairs()
    assert len(pairs) >= 7 and pairs == set(WRONG_HELPERS), pairs ^ set(WRONG_HELPERS)


def _helper_cells(lid, exercise, helper, kind):
    """The solution's cells, `helper` as the released stub or a wrong answer."""
    if kind == "stub":
        return {g: s for g, s in solution_cells(lid).items() if g != helper}
    wrong = WRONG_HELPERS[(lid, exercise, helper)]
    if isinstance(wrong, tuple):        # (old, new): a change in the solution's own cell
        cells = solution_cells(lid)
        assert wrong[0] in cells[helper], wrong[0]
        return dict(cells, **{helper: cells[helper].replace(*wrong)})
    if wrong is None:
        _, gid, old, new, _ = next(m for m in MISTAKES if m[0] == lid and m[1] == helper)
        return mistaken(lid, gid, old, new)
    return dict(solution_cells(lid), **{helper: wrong})


@pytest.mark.extended     # 14 cases, each run in the kit, the course and `grade`: .ci/run runs it (-m extended)
def test_each_helper_pair_gets_the_same_points_and_words_everywhere(kit_dir, tmp_path, grade):
    """A correct exercise beside a stub or a wrong helper it calls: full marks and the one sentence
    that says so, with the same words in the kit's self-check, the course's and `grade`'s."""
    from autograder.grading.independence import sentence
    from autograder.report.results import verdict
    cases = [(lid, exercise, helper, kind) for lid, exercise, helper in sorted(WRONG_HELPERS) for kind in ("stub", "wrong")]
    runs = [{"name": "/".join(c), "lesson": c[0], "cells": run_cells(c[0], _helper_cells(*c))} for c in cases]
    kit_runs, course_runs = drive(kit_dir, runs, tmp_path)["runs"], drive(ROOT, runs, tmp_path)["runs"]
    bad = []
    for case in cases:
        lid, exercise, helper, kind = case
        name, full = "/".join(case), points(lid)[exercise]
        said = sentence([helper], exercise)
        kit_check = next(c for c in kit_runs[name] if c.get("exercise") == exercise)
        course_check = next(c for c in course_runs[name] if c.get("exercise") == exercise)
        result = grade({lid: notebook_with(lid, _helper_cells(*case), tmp_path / name.replace("/", "-"))})
        tests = [t for t in result["tests"] if f"exercise:{exercise}" in t["tags"] and f"lesson:{lid}" in t["tags"]]
        graded = verdict(exercise, tests) + "\n"
        got = {"kit": (kit_check["score"], kit_check["verdict"]), "course": (course_check["score"], course_check["verdict"]),
               "grade": (sum(t["score"] for t in tests), graded)}
        if any(score != full or text.count(said) != 1 for score, text in got.values()) \
                or len({text for _, text in got.values()}) != 1:
            bad.append((name, got))
    assert not bad, bad


def test_recording_lesson10_keeps_only_the_references_passing_path():
    """The reference's memory checks run untraced while it is recorded, also in the run that records
    its helper's calls: traced, those recordings counted in its peak (44.7 and 60.4 MB against the
    40 MiB limit), the reference "failed" its own check, and the tape kept that failure's path: 4,363
    answers instead of 1,323 (commit 5add110)."""
    from autograder.deliver.kit.record import record
    tape = record(["10_flash_attention"], corpus=False)
    assert len(tape.calls["10_flash_attention"]["combine_attention"]) > 1000    # the helper's calls are recorded
    assert len(tape.entries) < 2000, len(tape.entries)
