"""The command line of the contract: paths, exit statuses and the --json file."""
from __future__ import annotations

import json

import pytest

from conftest import run_cli


def test_unknown_lesson_name_is_a_usage_error(tmp_path):
    bad = tmp_path / "my_homework.ipynb"
    bad.write_text("{}")
    run = run_cli("grade", bad)
    assert run.returncode == 2
    assert "matches no lesson" in run.stderr


def test_missing_path_is_a_usage_error(tmp_path):
    run = run_cli("grade", tmp_path / "nope")
    assert run.returncode == 2 and "does not exist" in run.stderr


def test_folder_without_lessons_is_a_usage_error(tmp_path):
    run = run_cli("grade", tmp_path)
    assert run.returncode == 2 and "no lesson notebooks" in run.stderr


def test_bad_option_is_a_usage_error():
    assert run_cli("grade").returncode == 2
    assert run_cli("grade", "lessons/", "--jobs", "0").returncode == 2


def test_cluster_options_are_checked_before_any_cluster_starts():
    for args, said in ((["--cluster", "local:0"], "--cluster takes local:N"),
                       (["--cluster", "ssh:2"], "--cluster takes local:N"),
                       (["--cluster", "local:2", "--jobs", "2"], "--jobs is for this machine"),
                       (["--cluster", "local:2", "--scheduler", "tcp://127.0.0.1:1"], "not allowed with")):
        run = run_cli("grade", "lessons/", *args)
        assert run.returncode == 2 and said in run.stderr, (args, run.stderr[-500:])


@pytest.mark.slow
def test_single_notebook_with_json(tmp_path):
    out = tmp_path / "r.json"
    run = run_cli("grade", "solutions/01_scaled_dot_product_attention.ipynb", "--json", out)
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())
    assert results["score"] == results["max_score"] > 0
    assert {t["tags"][0] for t in results["tests"]} == {"lesson:01_scaled_dot_product_attention"}


@pytest.mark.slow
def test_broken_notebook_is_a_graded_result_not_a_crash(tmp_path):
    folder = tmp_path / "student"
    folder.mkdir()
    (folder / "01_scaled_dot_product_attention.ipynb").write_text("this is not json")
    out = tmp_path / "r.json"
    run = run_cli("grade", folder, "--json", out)
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())
    assert results["score"] == 0 and results["max_score"] > 0
    assert all("not valid JSON" in t["output"] for t in results["tests"])


@pytest.mark.slow
def test_one_notebook_shows_the_whole_diagnosis_and_brief_one_line_per_exercise(tmp_path):
    """Where the student looks: the terminal shows the self-check's text for each exercise that
    lost points (root cause, mistake, fix, one line per failing check), never one truncated line;
    --brief keeps one line per exercise; --verbose adds every check and all it saw."""
    from autograder.classroom import accuracy
    entry = next(e for e in accuracy.load() if e.name == "wrong_05_seed000_fill_minus_1e9")
    path = tmp_path / "05_multi_head_attention.ipynb"
    path.write_text(accuracy.notebook_for(entry))
    full = run_cli("grade", path)
    assert full.returncode == 0, full.stderr
    for expected in ("Root cause: A fully blocked row still attends [masked-row-leak].", "Fix: Fill with -inf",
                     "FAILED  MultiHeadAttention honours a causal (T, T) mask"):
        assert expected in full.stdout, full.stdout
    assert full.stdout.count("Fix: Fill with -inf") == 1, full.stdout     # no paragraph twice
    assert full.stdout.count("masked-row-leak") == 1, full.stdout         # named once, not under every check
    assert "passed  " not in full.stdout, full.stdout                    # passed checks: in --verbose
    failed = [ln for ln in full.stdout.splitlines() if ln.strip().startswith("FAILED")]
    assert failed and all(": " in ln for ln in failed), full.stdout        # name: what it saw, one line each
    brief = run_cli("grade", path, "--brief")
    assert brief.returncode == 0, brief.stderr
    assert "FAILED" not in brief.stdout and "Fix:" not in brief.stdout
    exercise_lines = [ln for ln in brief.stdout.splitlines() if ln.startswith("    ")]
    assert len(exercise_lines) == 3, brief.stdout          # split_heads, merge_heads, MultiHeadAttention
    verbose = run_cli("grade", path, "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert "passed  MultiHeadAttention matches" in verbose.stdout, verbose.stdout
    assert verbose.stdout.count("Fix: Fill with -inf") == 1, verbose.stdout
    assert len(verbose.stdout.splitlines()) > len(full.stdout.splitlines())
    for ln in failed:          # everything the default shows, verbose shows too
        name = ln.strip()[len("FAILED  "):].split(": ")[0]
        assert f"FAILED  {name}" in verbose.stdout, (name, verbose.stdout)


def test_output_piped_into_head_ends_without_a_traceback():
    """`python -m autograder grade lessons/ --verbose | head`: once head has stopped reading, the
    command ends quietly (a student audit saw a BrokenPipeError traceback)."""
    import os
    import subprocess
    import sys
    from conftest import ROOT
    read, write = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "lessons/01_scaled_dot_product_attention.ipynb",
                             "--verbose"], cwd=ROOT, stdout=write, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    os.close(write)
    with os.fdopen(read) as out:
        first = out.readline()          # what `head -1` reads; then it closes the pipe
    _, stderr = proc.communicate(timeout=600)
    assert first.startswith("sandbox: ") and "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert proc.returncode == 1


def test_the_sandbox_line_names_the_layers_and_verbose_says_what_they_hold():
    """A student's grade starts with the layers' names, not a paragraph of isolation terms (a student
    audit counted ~440 characters); --verbose and `doctor` give them in full."""
    lesson = "lessons/01_scaled_dot_product_attention.ipynb"
    short, full = (run_cli("grade", lesson, *flag).stdout.splitlines()[0] for flag in ((), ("--verbose",)))
    assert short.startswith("sandbox: ") and short.endswith("(--verbose says what each holds)"), short
    assert len(short) < 160 < len(full) and "seccomp" in short and "seccomp (" in full, (short, full)
    for name in ("bubblewrap", "separate user", "no capabilities", "resource limits", "Landlock", "seccomp",
                 "MISSING", "NO "):
        assert (name in short) == (name in full), (name, short, full)
