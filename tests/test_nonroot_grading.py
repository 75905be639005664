"""A class graded end to end by the command line, whoever runs it: CI runs this file as root
and again as an ordinary user (see .ci/run), as an instructor on a laptop would."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop

LESSON = "01_scaled_dot_product_attention"


def test_a_class_is_graded_and_written_by_whoever_runs_the_grader(tmp_path):
    for student, source in (("ada", ROOT / "solutions"), ("bob", ROOT / "lessons")):
        (tmp_path / "class" / student).mkdir(parents=True)
        shutil.copy(source / f"{LESSON}.ipynb", tmp_path / "class" / student)
    out = tmp_path / "out"
    # two jobs: each forks from the fork server (classroom.py), as a class run on a laptop does
    run = run_cli("grade", tmp_path / "class", "--out", out, "--json", tmp_path / "r.json", "--jobs", "2")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("sandbox: "), run.stdout
    if os.geteuid() != 0:   # an ordinary user gets no uid separation, but still the other layers
        assert "separate user" not in run.stdout.splitlines()[0]
    assert "Landlock" in run.stdout.splitlines()[0]
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["ada"]["score"] == results["ada"]["max_score"] > 0
    assert results["bob"]["score"] == 0
    for student in ("ada", "bob"):
        assert json.loads((out / "students" / student / "results.json").read_text()) == results[student]
        assert os.stat(out / "students" / student / "results.json").st_uid == os.geteuid()
    assert (out / "grades.csv").read_text().startswith("student,score,max_score")
