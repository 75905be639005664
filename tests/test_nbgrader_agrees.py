"""`nbgrader autograde` and our grader give the same totals: configured as the README says, nbgrader's
autograde step runs no kernel and takes each self-check cell's points from the sandboxed grader."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from nbgrader.api import Gradebook

from autograder.course import COURSE
from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow     # runs nbgrader's whole pipeline on a class: not in the quick loop

LESSON = "01_scaled_dot_product_attention"
PARTIAL = {
    "softmax": "def softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
               "    return e / e.sum(axis=axis, keepdims=True)\n",
    "scaled_dot_product_attention": "def scaled_dot_product_attention(q, k, v, mask=None):\n"
                                    "    w = softmax(q @ np.swapaxes(k, -1, -2))\n    return w @ v, w\n",
}


# The README's nbgrader configuration: autograde runs no kernel; the sandboxed grader's scores
# are written into the self-check cells (autograder/deliver/nbgrader_grades.py).
NBGRADER_CONFIG = """c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = 'mha'
import sys
sys.path.insert(0, {course!r})
from autograder.deliver.nbgrader_grades import configure
configure(c)
"""


def nbgrader(course, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("MPLBACKEND", None)
    run = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]


def course_with(course, config: str):
    """An nbgrader course folder with lesson 01 as assignment l01, generated (released)."""
    (course / "source" / "l01").mkdir(parents=True)
    shutil.copy(COURSE[LESSON].solution_path, course / "source" / "l01")
    (course / "nbgrader_config.py").write_text(config.format(root=str(course), course=str(ROOT)))
    nbgrader(course, "db", "assignment", "add", "l01")
    nbgrader(course, "generate_assignment", "l01", "--force")
    return course


@pytest.fixture(scope="module")
def configured(tmp_path_factory):
    """A course configured as the README says, three students autograded: the reference solution,
    the untouched release and a partial answer (both tests read it: one nbgrader pipeline, ~30 s)."""
    course = course_with(tmp_path_factory.mktemp("configured") / "course", NBGRADER_CONFIG)
    released = course / "release" / "l01" / f"{LESSON}.ipynb"
    partial = json.loads(released.read_text())
    for cell in partial["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in PARTIAL:
            cell["source"] = PARTIAL[gid]
    submissions = {"reference": (course / "source" / "l01" / f"{LESSON}.ipynb").read_text(),
                   "untouched": released.read_text(), "partial": json.dumps(partial)}
    for student, text in submissions.items():
        folder = course / "submitted" / student / "l01"
        folder.mkdir(parents=True)
        (folder / f"{LESSON}.ipynb").write_text(text)
    nbgrader(course, "autograde", "l01", "--force", "--create")
    return course, list(submissions)


def autograded(course, student):
    """(score, max score) in nbgrader's gradebook, and what each self-check cell printed."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        submission = gb.find_submission("l01", student)
        score = (submission.score, submission.max_score)
    graded = json.loads((course / "autograded" / student / "l01" / f"{LESSON}.ipynb").read_text())
    checks = [c for c in graded["cells"] if "self-check" in c["metadata"].get("tags", [])]
    return score, ["".join("".join(o.get("text", "")) for o in c["outputs"]) for c in checks]


def test_nbgrader_autograde_totals_equal_ours(configured, tmp_path):
    course, students = configured
    run = run_cli("grade", course / "submitted", "--json", tmp_path / "ours.json")
    assert run.returncode == 0, run.stderr
    ours = json.loads((tmp_path / "ours.json").read_text())
    theirs = {s: autograded(course, s)[0] for s in students}
    for student in students:
        assert theirs[student] == (ours[student]["score"], ours[student]["max_score"]), (student, theirs, ours[student])
    assert theirs["reference"][0] == theirs["reference"][1] > theirs["partial"][0] > theirs["untouched"][0] == 0


def test_autograde_without_configure_awards_nothing_and_says_why(configured, tmp_path):
    """An instructor who forgets `configure(c)`: nbgrader autograde runs the self-check cells in the
    student's own kernel, where they award 0 and name the lines to add (the first honest student's
    0 tells the instructor). Configured, the same correct notebook gets full marks."""
    unconfigured = NBGRADER_CONFIG.split("from autograder.deliver")[0]
    assert "configure" not in unconfigured
    course = course_with(tmp_path / "unconfigured", unconfigured)
    folder = course / "submitted" / "honest" / "l01"
    folder.mkdir(parents=True)
    shutil.copy(course / "source" / "l01" / f"{LESSON}.ipynb", folder)
    nbgrader(course, "autograde", "l01", "--force", "--create")
    scores, printed = {}, {}
    scores["unconfigured"], printed["unconfigured"] = autograded(course, "honest")
    # configured: the same notebook (the solution as released from source/), the configured course's "reference"
    scores["configured"], printed["configured"] = autograded(configured[0], "reference")
    checks = printed["unconfigured"]
    assert checks and all("nbgrader autograde ran this self-check in the student's own kernel" in p
                          and "configure(c)" in p for p in checks), checks
    assert printed["configured"] and not any("own kernel" in p for p in printed["configured"]), printed["configured"]
    assert scores["unconfigured"] == (0, 8) and scores["configured"] == (8, 8), scores
