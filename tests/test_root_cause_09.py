"""Root cause across lesson 09's exercises: generate calls next_token_probs (issues 25 and 32).

A correct generate on top of a wrong next_token_probs would draw other tokens, or raise inside
torch.multinomial. Issue 25 made its feedback name the mistake in next_token_probs; issue 32 grades
each exercise on its own: generate is graded with the reference's next_token_probs answers in place
of the wrong one, keeps its points, and says so in one sentence, while next_token_probs' own
exercise explains the mistake.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, notebook_with
from autograder.classroom.runner import grade_many
from autograder.diagnose.root_cause import split_summary

LESSON = "09_generating_text"
CORPUS = ROOT / "tests" / "corpus"

# next_token_probs with a typical mistake, each from the corpus; generate is the reference's
CASES = {
    "temperature-after-softmax": "wrong_09_probs_temperature_after_softmax.py",    # other tokens
    "top-p-drops-threshold-token": "wrong_09_probs_drops_threshold_token.py",     # NaN: multinomial raises
}


def cell(path: Path, grade_id: str) -> str:
    text = path.read_text(encoding="utf-8")
    return text.split(f"# %% {grade_id}\n", 1)[1].split("\n# %% ", 1)[0]


def reference_generate() -> str:
    nb = json.loads((ROOT / "solutions" / f"{LESSON}.ipynb").read_text(encoding="utf-8"))
    (source,) = ["".join(c["source"]) for c in nb["cells"]
                 if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "generate"]
    return source


@pytest.fixture(scope="module")
def results():
    generate = reference_generate()
    with tempfile.TemporaryDirectory(prefix="root-cause-09-") as tmp:
        students = {mistake: {LESSON: notebook_with(LESSON, {"next_token_probs": cell(CORPUS / name, "next_token_probs"),
                                                             "generate": generate}, Path(tmp) / mistake)}
                    for mistake, name in CASES.items()}
        return grade_many(students, jobs=2, show=lambda *_: None)


SUBSTITUTED = ("next_token_probs is wrong (its own checks say how), so generate was graded with the reference "
               "next_token_probs in its place.")


@pytest.mark.parametrize("mistake", sorted(CASES))
def test_generate_keeps_its_points_beside_a_wrong_next_token_probs(results, mistake):
    tests = [t for t in results[mistake]["tests"] if "exercise:generate" in t["tags"]]
    assert tests and all(t["status"] == "passed" for t in tests), [(t["name"], t["output"]) for t in tests]
    # said once per check that swapped it in, never blamed on generate
    said = [t for t in tests if SUBSTITUTED in t["output"]]
    assert said, [t["output"] for t in tests]
    assert all(t["output"].count(SUBSTITUTED) <= 1 and not any(m.startswith("mistake:") for m in t["tags"])
               for t in tests), tests
    probs = [t for t in results[mistake]["tests"] if "exercise:next_token_probs" in t["tags"] and t["status"] != "passed"]
    explained = split_summary(probs[0]["output"])[0]
    assert explained and f"[{mistake}]." in explained and "Fix: " in explained


def test_the_cache_and_mode_checks_are_not_blamed(results):
    """The reference generate loses no points for calling the model or for modes: those checks pass
    whatever next_token_probs does, or fail only through it."""
    for mistake in CASES:
        for t in results[mistake]["tests"]:
            if "exercise:generate" in t["tags"] and t["status"] != "passed":
                assert f"mistake:{mistake}" in t["tags"], (mistake, t["name"], t["output"])
