"""The quick loop's tour of the grader: one small, fast test for each part that the other quick
tests reach only through slow ones (a class run, the student kit, nbgrader's autograde step, the
doctor, lesson 09's checks). The slow tests check the same parts at full size; these make sure a
contributor's `python -m pytest -m "not slow"` runs every module of `autograder/` at least once.
"""
from __future__ import annotations

import csv
import math
import re
import shutil

import nbformat
import pytest
import torch
from torch import nn

from autograder.course import COURSE
from autograder.report.results import by_exercise
from conftest import ROOT, notebook_with, run_cli

L02 = "02_masking"
L09 = "09_generating_text"


def solution_cell(lesson: str, grade_id: str) -> str:
    nb = nbformat.read(str(COURSE[lesson].solution_path), as_version=4)
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_a_small_class_gets_grades_feedback_and_a_report(tmp_path):
    """`grade CLASS --out`: the class runner, its preloaded jobs, grades.csv and the class report."""
    cls, out = tmp_path / "class", tmp_path / "out"
    notebook_with(L02, {gid: solution_cell(L02, gid) for gid in COURSE[L02].exercises}, cls / "ada")
    notebook_with(L02, {}, cls / "bob")                                       # the stubs
    run = run_cli("grade", cls, "--out", out, "--jobs", "2")
    assert run.returncode == 0, run.stderr[-2000:]
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    total = sum(float(v) for k, v in rows["ada"].items() if k.startswith(L02))
    assert total == 12 and all(float(v) == 0 for k, v in rows["bob"].items() if k.startswith(L02)), rows
    # the report counts both, has a row for each, and in the details names only who lost points,
    # bob as not started (its charts' base64 once made "ada" appear in it by chance, so the names
    # are looked for in the text around them)
    report = re.sub(r"data:image/[^']+", "", (out / "class-report.html").read_text())
    assert "<b>2</b> student(s) graded" in report and "1 with full marks" in report
    students = report.split("<section id='students'>", 1)[1].split("</section>", 1)[0]
    assert "<td>bob</td>" in students and "<td>ada</td>" in students              # one row each
    details = report.split("</section>", 2)[2]                                   # after the summary and the table
    assert "Not started: 1 student(s) (bob)" in details and "<td>ada</td>" not in details
    assert (out / "students" / "bob" / "feedback.md").exists() and (out / "students" / "ada" / "feedback.md").exists()


def test_the_doctor_names_every_layer_and_what_a_child_tried():
    run = run_cli("doctor")
    assert run.returncode == 0, run.stdout + run.stderr
    for words in ("Landlock", "seccomp", "resource limits", "read the course folder: blocked"):
        assert words in run.stdout, words


@pytest.fixture(scope="module")
def kit02(tmp_path_factory):
    from autograder.deliver import kit
    out = tmp_path_factory.mktemp("kit") / "kit02"
    kit.write_kit(out, [L02], corpus=False)
    return out


def test_a_one_lesson_kit_self_checks_from_its_recordings(kit02, tmp_path):
    """The kit's modules are the self-check's closure, and its recordings give the same verdicts as
    the course: full marks for the solution, nothing for the stubs."""
    from test_student_kit import DRIVER, drive, run_cells, solution_cells
    names = sorted(p.relative_to(kit02).as_posix() for p in kit02.rglob("*.py"))
    assert "autograder/checks/test_02_masking.py" in names
    assert not [n for n in names if n.startswith(("autograder/isolate/", "autograder/deliver/", "autograder/classroom/"))]
    shutil.copy(DRIVER, kit02 / "kit_driver.py")
    runs = [{"name": "correct", "lesson": L02, "cells": run_cells(L02, solution_cells(L02))},
            {"name": "stub", "lesson": L02, "cells": run_cells(L02, {})}]
    got = drive(kit02, runs, tmp_path)
    assert got["autograder"] == str(kit02 / "autograder")
    correct = {c["exercise"]: c["score"] for c in got["runs"]["correct"] if "exercise" in c}
    assert correct == {"causal_mask": 3.0, "padding_mask": 3.0, "scaled_dot_product_attention": 6.0}, got["runs"]
    assert all(c["score"] == 0 for c in got["runs"]["stub"] if "exercise" in c)


def test_the_kits_lesson06_subjects_behave_as_their_routing_says():
    """deliver/kit_subjects.py: the correct routing is nn.MultiheadAttention; the buggy one is not."""
    from autograder.deliver import kit_subjects
    from test_lesson06_subjects import oracle_for
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))          # (B, T, D)
    outputs = {}
    for routing in ("correct", "buggy"):
        for style, source in kit_subjects.variants(routing, seed=7):
            scope = {"nn": nn, "torch": torch, "F": torch.nn.functional, "math": math}
            exec(source, scope)
            torch.manual_seed(1)
            layer = scope[kit_subjects.CLASS_NAME](8, 2, 0.0).eval()
            with torch.no_grad():
                outputs[routing, style] = torch.allclose(layer(x), oracle_for(layer, 8, 2)(x, x, x)[0], atol=1e-5)
    assert all(ok for (routing, _), ok in outputs.items() if routing == "correct"), outputs
    assert not any(ok for (routing, _), ok in outputs.items() if routing == "buggy"), outputs


def test_nbgrader_autograde_step_writes_the_sandboxes_scores(tmp_path):
    """deliver/nbgrader_grades.py on one notebook: each self-check cell gets the grader's points."""
    from autograder.deliver.nbgrader_grades import SandboxGrades
    cells = {"causal_mask": solution_cell(L02, "causal_mask")}
    nb = nbformat.read(str(notebook_with(L02, cells, tmp_path)), as_version=4)
    nb, _ = SandboxGrades().preprocess(nb, {"unique_key": L02})
    scores = {}
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade") and not cell.metadata["nbgrader"].get("solution"):
            results = [o for o in cell.outputs if o.output_type == "execute_result"]
            scores[cell.metadata["nbgrader"]["grade_id"]] = float(results[0]["data"]["text/plain"])
    assert scores == {"check_causal_mask": 3.0, "check_padding_mask": 0.0, "check_scaled_dot_product_attention": 0.0}


def test_lesson09_reference_gets_full_marks_and_its_stubs_nothing(grade, tmp_path):
    solved = notebook_with(L09, {gid: solution_cell(L09, gid) for gid in COURSE[L09].exercises}, tmp_path / "a")
    stubs = notebook_with(L09, {}, tmp_path / "b")
    full = by_exercise(grade({L09: solved}))
    empty = by_exercise(grade({L09: stubs}))
    assert all(e["score"] == e["max"] > 0 for e in full.values()), full
    assert sum(e["max"] for e in full.values()) == 19
    assert all(e["score"] == 0 for e in empty.values()) and set(empty) == set(full)
