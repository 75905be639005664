"""The command line of the contract: paths, exit statuses and the --json file."""
from __future__ import annotations

import json

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


def test_single_notebook_with_json(tmp_path):
    out = tmp_path / "r.json"
    run = run_cli("grade", "solutions/01_scaled_dot_product_attention.ipynb", "--json", out)
    assert run.returncode == 0, run.stderr
    results = json.loads(out.read_text())
    assert results["score"] == results["max_score"] > 0
    assert {t["tags"][0] for t in results["tests"]} == {"lesson:01_scaled_dot_product_attention"}


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
