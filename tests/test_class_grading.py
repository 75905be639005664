"""Grading a class: layouts, per-student files, grades.csv, resume after a kill, determinism."""
from __future__ import annotations

import csv
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

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop

L01 = "01_scaled_dot_product_attention"


def make_class(root):
    shutil.copy(COURSE[L01].solution_path, (root / "ada").mkdir(parents=True) or root / "ada" / f"{L01}.ipynb")
    shutil.copy(COURSE[L01].released_path, (root / "bob").mkdir() or root / "bob" / f"{L01}.ipynb")
    (root / "cyd").mkdir()
    (root / "cyd" / f"{L01}.ipynb").write_text("{ broken")
    notebook_with("02_masking", {"causal_mask": "def causal_mask(seq_len):\n    return np.triu(np.ones((seq_len, seq_len), dtype=bool))\n"},
                  root / "cyd")


@pytest.fixture(scope="module")
def class_run(tmp_path_factory):
    """The class above graded once with two jobs; the tests below read it (and copy it to change it)."""
    root = tmp_path_factory.mktemp("class-run")
    make_class(root / "class")
    run = run_cli("grade", root / "class", "--out", root / "out", "--json", root / "r.json", "--jobs", "2")
    assert run.returncode == 0, run.stderr
    return root


def test_class_folder_with_feedback_and_grades_csv(class_run):
    out = class_run / "out"
    results = json.loads((class_run / "r.json").read_text())
    assert set(results) == {"ada", "bob", "cyd"}
    assert results["ada"]["score"] == results["ada"]["max_score"] > 0
    assert results["bob"]["score"] == 0
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert float(rows["ada"]["score"]) == results["ada"]["score"]
    assert f"{L01}:softmax" in rows["ada"]
    feedback = (out / "students" / "cyd" / "feedback.md").read_text()
    assert "not valid JSON" in feedback and "causal-transposed" in feedback
    assert json.loads((out / "students" / "bob" / "results.json").read_text()) == results["bob"]
    assert not list(out.rglob("*.tmp"))


def test_restart_grades_only_what_is_missing(class_run, tmp_path):
    shutil.copytree(class_run / "class", tmp_path / "class")
    shutil.copytree(class_run / "out", tmp_path / "out")      # copy2 keeps the files' times
    out = tmp_path / "out"
    first = {s: (out / "students" / s / "results.json").stat().st_mtime_ns for s in ("ada", "bob", "cyd")}
    # a run killed before bob was written: his files are missing
    (out / "students" / "bob" / "results.json").unlink()
    (out / "students" / "bob" / "fingerprint").unlink()
    run = run_cli("grade", tmp_path / "class", "--out", out, "--jobs", "1")
    assert run.returncode == 0
    assert (out / "students" / "ada" / "results.json").stat().st_mtime_ns == first["ada"]
    assert (out / "students" / "cyd" / "results.json").stat().st_mtime_ns == first["cyd"]
    assert (out / "students" / "bob" / "results.json").exists()
    # a changed submission is regraded
    shutil.copy(COURSE[L01].solution_path, tmp_path / "class" / "bob" / f"{L01}.ipynb")
    assert run_cli("grade", tmp_path / "class", "--out", out).returncode == 0
    bob = json.loads((out / "students" / "bob" / "results.json").read_text())
    assert bob["score"] == bob["max_score"]


def test_nbgrader_submitted_layout(tmp_path):
    sub = tmp_path / "submitted" / "dana" / "lesson1"
    sub.mkdir(parents=True)
    shutil.copy(COURSE[L01].solution_path, sub / f"{L01}.ipynb")
    run = run_cli("grade", tmp_path / "submitted", "--json", tmp_path / "r.json")
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["dana"]["score"] == results["dana"]["max_score"] > 0


def test_same_submission_same_json(tmp_path):
    outs = []
    for name in ("a.json", "b.json"):
        run = run_cli("grade", ROOT / "solutions" / f"{L01}.ipynb", "--json", tmp_path / name)
        assert run.returncode == 0
        outs.append((tmp_path / name).read_text())
    assert outs[0] == outs[1]


def _marked(marker: str) -> dict[int, str]:
    """Processes whose environment holds `marker`, and the bubblewrap workers they started: {pid: cmdline}."""
    found, parents = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{entry}/stat").read_text()
            parents[int(entry)] = (int(stat[stat.rindex(")") + 2:].split()[1]), cmdline)
            if marker.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                found[int(entry)] = cmdline
        except (OSError, ValueError):
            pass
    grown = True
    while grown:   # the sandboxed workers have an environment of their own: found as descendants
        more = {pid: cmd for pid, (ppid, cmd) in parents.items() if ppid in found and pid not in found}
        found.update(more)
        grown = bool(more)
    return found


def test_a_killed_class_run_leaves_nothing_behind(tmp_path):
    """A TA's `kill` (or a CI time-out) ends the grader: its jobs, their fork server and the
    sandboxed workers must go with it, not wait forever with torch loaded."""
    for name in ("ada", "bob", "cyd", "dan"):
        for lesson in ("03_self_attention_head", "05_multi_head_attention"):
            (tmp_path / "class" / name).mkdir(parents=True, exist_ok=True)
            shutil.copy(COURSE[lesson].solution_path, tmp_path / "class" / name / f"{lesson}.ipynb")
    marker = f"AUTOGRADER_TEST_MARK_{uuid.uuid4().hex}"
    env = dict(os.environ, PYTHONPATH=str(ROOT), **{marker: "1"})
    grader = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(tmp_path / "class"), "--jobs", "2",
                               "--out", str(tmp_path / "out")], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:   # until the jobs and a worker run
            running = _marked(marker)
            if sum("forkserver" in cmd for cmd in running.values()) >= 3 and any("zygote" in cmd for cmd in running.values()):
                break
            assert grader.poll() is None, "the class run ended before it could be killed"
            time.sleep(0.05)
        else:
            pytest.fail(f"the jobs did not start: {_marked(marker)}")
        grader.terminate()
        grader.wait(timeout=30)
        deadline = time.monotonic() + 10
        while _marked(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _marked(marker)
    finally:
        for pid in _marked(marker):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    assert not left, f"processes outlived the killed grader: {left}"
