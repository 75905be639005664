"""Root cause across lesson 09's exercises: generate calls next_token_probs (issue 25).

A correct generate on top of a wrong next_token_probs draws other tokens, or raises inside
torch.multinomial. Its feedback must name the mistake in next_token_probs, once (the
next_token_probs exercise explains it; generate refers to it), and tell the student to fix
next_token_probs, not generate, as lesson 01 does for a wrong softmax under attention.
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


@pytest.mark.parametrize("mistake", sorted(CASES))
def test_generate_names_next_token_probs_as_the_root_cause(results, mistake):
    tests = [t for t in results[mistake]["tests"] if "exercise:generate" in t["tags"]]
    failed = [t for t in tests if t["status"] != "passed"]
    assert failed, f"a wrong next_token_probs ({mistake}) changed nothing in generate's checks"
    head, _ = split_summary(failed[0]["output"])
    assert head is not None, failed[0]["output"]
    # the root cause is next_token_probs' mistake, said by reference to that exercise, fixed there
    assert head.startswith("Root cause: ") and f"[{mistake}], as in next_token_probs above" in head, head
    assert "Fix: the same as for next_token_probs above." in head, head
    assert "in next_token_probs, which generate calls" in head, head
    # nothing blamed on generate itself, and the explanation is not said a second time
    for t in failed:
        assert [m[8:] for m in t["tags"] if m.startswith("mistake:")] == [mistake], t["tags"]
        assert "Root cause" not in split_summary(t["output"])[1]
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
