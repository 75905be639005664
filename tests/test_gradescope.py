"""The Gradescope bundle: built by `python -m autograder gradescope`, run in a temporary root."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.course import COURSE
from autograder.deliver.gradescope import find_notebooks, grading_requirements
from conftest import ROOT, run_cli

L01, L02, L03, L04 = list(COURSE)[:4]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    run = run_cli("gradescope", "--out", out)
    assert run.returncode == 0, run.stderr
    assert "wrote" in run.stdout
    return out


def unpack(bundle: Path, root: Path) -> Path:
    """Lay out Gradescope's /autograder: source/ (the zip), submission/, results/."""
    source = root / "source"
    with zipfile.ZipFile(bundle) as zf:
        for info in zf.infolist():
            target = source / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777)
    (root / "submission").mkdir()
    return source


def run_autograder(root: Path, python: str = sys.executable) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=python)
    run = subprocess.run([str(root / "source" / "run_autograder")], env=env, cwd=root,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads((root / "results" / "results.json").read_text())


def test_bundle_holds_the_grader_the_reference_and_both_scripts(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {i.filename: (i.external_attr >> 16) & 0o777 for i in zf.infolist()}
        requirements = zf.read("requirements.txt").decode()
    assert {"setup.sh", "run_autograder", "requirements.txt", "gradescope.json"} <= names
    assert modes["setup.sh"] & stat.S_IXUSR and modes["run_autograder"] & stat.S_IXUSR
    for lesson in COURSE:
        assert f"solutions/{lesson}.ipynb" in names and f"lessons/{lesson}.ipynb" in names
        assert f"autograder/checks/test_{lesson}.py" in names
    assert "autograder/checks/pytest.ini" in names and "autograder/pipeline.py" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert "torch==2.13.0" in requirements.splitlines()  # the same pins as the course


def test_bundle_is_reproducible(bundle, tmp_path):
    again = tmp_path / "again.zip"
    assert run_cli("gradescope", "--out", again).returncode == 0
    assert again.read_bytes() == bundle.read_bytes()


def test_grading_requirements_keep_the_course_pins_and_refuse_a_missing_one():
    text = (ROOT / "requirements.txt").read_text()
    kept = grading_requirements(text).splitlines()
    course = {line.strip() for line in text.splitlines()}
    assert all(line in course for line in kept if not line.startswith("#"))
    assert not any(line.startswith(("nbgrader", "jupyter-book", "selenium", "-e")) for line in kept)
    with pytest.raises(ValueError, match="torch"):
        grading_requirements(text.replace("torch==2.13.0", ""))


@pytest.mark.slow
def test_run_autograder_grades_the_upload_into_results_json(bundle, tmp_path):
    source = unpack(bundle, tmp_path)
    sub = tmp_path / "submission"
    (sub / "my_work").mkdir()
    shutil.copy(ROOT / "solutions" / f"{L01}.ipynb", sub / "my_work")      # nested: still found
    shutil.copy(ROOT / "lessons" / f"{L02}.ipynb", sub / f"{L02}-Copy1.ipynb")  # renamed download
    (sub / f"{L04}.ipynb").write_text('{"cells": [ broken')                 # not JSON
    (sub / "scratch.ipynb").write_text("{}")
    (sub / "__MACOSX").mkdir()
    shutil.copy(ROOT / "lessons" / f"{L01}.ipynb", sub / "__MACOSX")
    result = run_autograder(tmp_path)

    assert (source / "run_autograder").exists()
    total = sum(t["max_score"] for t in result["tests"])
    assert result["max_score"] == total == 108         # every lesson counts, submitted or not (01-06: 55, 07: 11, 08: 13, 09: 19, 10: 10)
    by_lesson = {}
    for test in result["tests"]:
        assert {"name", "score", "max_score", "status", "output", "tags"} <= set(test)
        lesson = test["tags"][0].removeprefix("lesson:")
        by_lesson.setdefault(lesson, []).append(test)
    assert all(t["status"] == "passed" for t in by_lesson[L01])
    assert result["score"] == sum(t["max_score"] for t in by_lesson[L01]) == 8
    assert all("mistake:not-implemented" in t["tags"] for t in by_lesson[L02])
    assert all(t["output"].startswith(f"not submitted: no file named {L03}.ipynb")
               for t in by_lesson[L03])
    assert all("could not be graded" in t["output"] and "JSON" in t["output"] for t in by_lesson[L04])
    assert f"{L02}-Copy1.ipynb was graded as {L02}.ipynb" in result["output"]
    assert "scratch.ipynb matches no lesson" in result["output"]
    assert "__MACOSX" not in result["output"]


@pytest.mark.slow
def test_bundle_for_some_lessons_grades_only_those(tmp_path):
    out = tmp_path / "two.zip"
    run = run_cli("gradescope", "--out", out, "--lessons", L01, L02)
    assert run.returncode == 0, run.stderr
    unpack(out, tmp_path)
    shutil.copy(ROOT / "solutions" / f"{L02}.ipynb", tmp_path / "submission")
    result = run_autograder(tmp_path)
    assert {t["tags"][0] for t in result["tests"]} == {f"lesson:{L01}", f"lesson:{L02}"}
    assert result["score"] == 12 and result["max_score"] == 20


def test_results_json_is_written_even_when_the_grader_cannot_start(bundle, tmp_path):
    unpack(bundle, tmp_path)
    result = run_autograder(tmp_path, python="/bin/false")
    assert result["score"] == 0 and result["tests"] == []
    assert "autograder failed" in result["output"]


def test_a_results_json_forged_before_the_grader_dies_is_replaced(bundle, tmp_path):
    """A submission that writes results.json and then kills the grader earns nothing, and an
    older results.json is never kept."""
    unpack(bundle, tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "results.json").write_text('{"score": 99, "tests": []}')
    assert run_autograder(tmp_path, python="/bin/false")["score"] == 0
    killed = tmp_path / "python-killed"   # writes full marks, then dies as if SIGKILLed
    killed.write_text(f"#!/bin/sh\necho '{{\"score\": 55, \"tests\": []}}' > {tmp_path}/results/results.json\n"
                      "kill -9 $$\n")
    killed.chmod(0o755)
    result = run_autograder(tmp_path, python=str(killed))
    assert result["score"] == 0 and "autograder failed" in result["output"]


def test_setup_installs_the_bundled_requirements_with_the_cpu_torch_index(bundle, tmp_path):
    source = unpack(bundle, tmp_path)
    log = tmp_path / "pip.log"
    fake = tmp_path / "python3"   # records what setup.sh asks for instead of installing it
    fake.write_text(f'#!/bin/sh\necho "$PWD $*" >> {log}\nexit 0\n')
    fake.chmod(0o755)
    run = subprocess.run(["bash", str(source / "setup.sh")], env=dict(os.environ, AUTOGRADER_PYTHON=str(fake)),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    install = [line for line in log.read_text().splitlines() if " -m pip install " in line]
    assert len(install) == 1
    assert install[0].startswith(str(source) + " ")
    assert "-r requirements.txt" in install[0] and "download.pytorch.org/whl/cpu" in install[0]


def test_unknown_lesson_is_a_usage_error(tmp_path):
    run = run_cli("gradescope", "--out", tmp_path / "x.zip", "--lessons", "07_nope")
    assert run.returncode == 2 and "07_nope" in run.stderr
    assert not (tmp_path / "x.zip").exists()


def test_find_notebooks_prefers_the_exact_name_and_says_what_it_ignored(tmp_path):
    (tmp_path / "a").mkdir()
    for name in (f"{L01}.ipynb", f"a/{L01}.ipynb", f"{L02} (1).ipynb", f".ipynb_checkpoints/{L02}.ipynb"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    found, notes = find_notebooks(tmp_path, list(COURSE))
    assert found == {L01: tmp_path / f"{L01}.ipynb", L02: tmp_path / f"{L02} (1).ipynb"}
    assert any(f"a/{L01}.ipynb was ignored" in n for n in notes)
    assert not any("checkpoints" in n for n in notes)


FORGER = '''
import json
FORGED = []
for target, text in {targets!r}.items():
    try:
        with open(target, "w") as f:
            f.write(text)
        FORGED.append(target)
    except OSError:
        pass
def softmax(x, axis=-1):
    if FORGED:
        raise RuntimeError("wrote " + ", ".join(FORGED))
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''


@pytest.mark.slow
def test_a_submission_cannot_forge_results_json_or_edit_the_bundle(bundle, tmp_path, file_protection):
    from conftest import notebook_with
    source = unpack(bundle, tmp_path)
    fake = json.dumps({"score": 55, "max_score": 55, "tests": []})
    targets = {str(tmp_path / "results" / "results.json"): fake,
               str(source / "autograder" / "checks" / f"test_{L01}.py"): "LESSON = None\n"}
    cell = FORGER.format(targets=targets) + '''
def scaled_dot_product_attention(q, k, v, mask=None):
    raise NotImplementedError()
'''
    nb = notebook_with(L01, {"softmax": cell}, tmp_path / "work")
    shutil.copy(nb, tmp_path / "submission")
    (tmp_path / "results").mkdir()
    before = (source / "autograder" / "checks" / f"test_{L01}.py").read_bytes()
    result = run_autograder(tmp_path)
    softmax = [t for t in result["tests"] if "exercise:softmax" in t["tags"]]
    assert softmax and all(t["status"] == "passed" for t in softmax), [t["output"] for t in softmax]
    assert result["score"] == sum(t["max_score"] for t in softmax) < result["max_score"] == 108   # every lesson counts
    assert (source / "autograder" / "checks" / f"test_{L01}.py").read_bytes() == before


@pytest.mark.slow
def test_every_check_of_a_lesson_not_handed_in_says_not_submitted(tmp_path, monkeypatch):
    """Lessons 01, 05 and 09 uploaded, with a course secret in the bundle (lesson 06 then draws its
    subjects' order from the submission's code): every check of every other lesson, lesson 06's
    test_projections included, says "not submitted", and no autograder error is reported."""
    uploaded = ["01_scaled_dot_product_attention", "05_multi_head_attention", "09_generating_text"]
    monkeypatch.setenv("AUTOGRADER_SECRET", "a secret for this test")
    out = tmp_path / "bundle.zip"
    run = run_cli("gradescope", "--out", out)
    assert run.returncode == 0, run.stderr
    root = tmp_path / "gradescope"
    source = unpack(out, root)
    assert (source / ".course-secret").exists()
    monkeypatch.delenv("AUTOGRADER_SECRET")
    for lesson in uploaded:
        shutil.copy(ROOT / "solutions" / f"{lesson}.ipynb", root / "submission")
    result = run_autograder(root)

    assert "autograder error" not in result.get("output", ""), result.get("output")
    by_lesson: dict[str, list[dict]] = {}
    for test in result["tests"]:
        by_lesson.setdefault(test["tags"][0].removeprefix("lesson:"), []).append(test)
    assert set(by_lesson) == set(COURSE)
    for lesson in set(COURSE) - set(uploaded):
        for test in by_lesson[lesson]:
            assert test["score"] == 0 and test["output"].startswith(
                f"not submitted: no file named {lesson}.ipynb"), (test["name"], test["output"])
    assert any("test_projections" in t["tags"][1] for t in by_lesson["06_debugging_projection_reuse"])
    assert result["score"] == sum(t["max_score"] for lesson in uploaded for t in by_lesson[lesson])


def test_a_lesson_not_handed_in_answers_every_question_with_the_reason():
    from autograder.grading.student import ExerciseUnavailable, Student
    from autograder.pipeline import BrokenSubmission
    student = Student(BrokenSubmission("not submitted: no file", prefix=""))
    for ask in (student._fingerprint, lambda: student.softmax(1.0), lambda: student.test_projections.isolated(),
                lambda: student._submission.fresh_call, lambda: student._submission.anything_else):
        with pytest.raises(ExerciseUnavailable, match="^not submitted: no file$"):
            ask()


@pytest.mark.slow
def test_instructors_try_the_bundle_locally_steps_run_as_written(tmp_path):
    """INSTRUCTORS.md's "Try the bundle locally": its lines, run by bash from the repository's
    folder (only the scratch folder moved into tmp_path), build, unpack and run the bundle."""
    import re
    text = (ROOT / "INSTRUCTORS.md").read_text()
    section = text.split("### Try the bundle locally", 1)[1].split("\n## ", 1)[0]
    script = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    assert script.count("GS=/tmp/gradescope-try") == 1
    script = script.replace("GS=/tmp/gradescope-try", f"GS={tmp_path / 'gs'}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}   # this checkout's autograder, as for `grade`
    run = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "graded: 8/20" in run.stdout                          # the comment says what to expect
    result = json.loads((tmp_path / "gs" / "results" / "results.json").read_text())
    assert (result["score"], result["max_score"]) == (8, 20)
    assert '"score": 8.0' in run.stdout                          # json.tool printed the results
    lessons = {t["tags"][0] for t in result["tests"]}
    assert lessons == {"lesson:01_scaled_dot_product_attention", "lesson:02_masking"}
