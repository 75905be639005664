"""Crafted files and folders in a class: each costs only its own student, with a clear message,
and the class run finishes with every other student graded and every output written."""
from __future__ import annotations

import csv
import json
import os
import shutil

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop

LESSON = "01_scaled_dot_product_attention"
ESC = "\x1b[2J\x1b]0;pwned\x07"


def make_class(tmp_path):
    klass = tmp_path / "class"
    good = klass / "good"
    good.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / f"{LESSON}.ipynb", good)
    nb = f"{LESSON}.ipynb"

    def student(name):
        folder = klass / name
        folder.mkdir()
        return folder / nb

    student("link_to_solutions").symlink_to(ROOT / "solutions" / nb)     # would score full marks
    student("link_to_dev_zero").symlink_to("/dev/zero")                    # would never end
    os.mkfifo(student("fifo"))                                             # would block forever
    released = json.loads((ROOT / "lessons" / nb).read_text())
    released["nbformat"] = "4"
    student("nbformat_string").write_text(json.dumps(released))
    student("deep_json").write_text("[" * 100_000 + "]" * 100_000)
    shutil.copy(ROOT / "lessons" / nb, student("grades.csv"))             # a student named like a class file
    shutil.copy(ROOT / "lessons" / nb, student(f"escape{ESC}"))
    (klass / "linked_folder").symlink_to(ROOT / "solutions")              # a whole folder of answers
    return klass


def test_crafted_files_cost_only_their_student(tmp_path):
    klass = make_class(tmp_path)
    out = tmp_path / "out"
    run = run_cli("grade", klass, "--out", out, "--json", tmp_path / "r.json", "--jobs", "2", timeout=300)
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["good"]["score"] == results["good"]["max_score"] > 0
    assert "linked_folder" not in results and "symbolic link" in run.stderr
    reasons = {name: results[name].get("output", "") for name in results}
    assert results["link_to_solutions"]["score"] == 0 and "symbolic link" in reasons["link_to_solutions"]
    assert results["link_to_dev_zero"]["score"] == 0 and "symbolic link" in reasons["link_to_dev_zero"]
    assert results["fifo"]["score"] == 0 and "not a regular file" in reasons["fifo"]
    assert results["deep_json"]["score"] == 0 and "nested far too deeply" in reasons["deep_json"]
    assert "format number" in reasons["nbformat_string"]
    assert results["grades.csv"]["score"] == 0
    # every student has the same maximum, and the class file is intact
    assert len({r["max_score"] for r in results.values()}) == 1
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert {r["student"] for r in rows} == set(results)
    assert (out / "students" / "grades.csv" / "results.json").exists()
    # no raw escape code reaches the terminal or a feedback file
    assert "\x1b" not in run.stdout and "\x1b" not in run.stderr and "\\x1b" in run.stdout
    for feedback in (out / "students").glob("*/feedback.md"):
        assert "\x1b" not in feedback.read_text()
