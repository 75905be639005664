"""Issue 32: an uncatalogued difference is described by what the grader saw (the check, its inputs,
what the answer equals), never by a guess at the cause. OpenNMT chooses top-p before top-k on the
logits, fairseq applies top-p or top-k, never both: both were told "top-k is applied to the
probabilities after the softmax", which neither does."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from autograder.classroom import accuracy
from autograder.classroom.runner import grade_many

pytestmark = pytest.mark.slow

STYLES = ["wrong_09_probs_opennmt_style", "wrong_09_probs_fairseq_style"]


@pytest.fixture(scope="module")
def graded():
    entries = [accuracy.parse(accuracy.CORPUS / f"{name}.py") for name in STYLES]
    with tempfile.TemporaryDirectory(prefix="observed-") as tmp:
        results = grade_many(accuracy.build_class(entries, Path(tmp)), jobs=2, show=lambda *_: None)
    return results


@pytest.mark.parametrize("name", STYLES)
def test_the_order_of_top_k_and_top_p_is_described_as_seen(graded, name):
    tests = [t for t in graded[name]["tests"] if "exercise:next_token_probs" in t["tags"]]
    failed = [t for t in tests if t["status"] != "passed"]
    text = "\n".join(t["output"] for t in failed)
    assert failed and not any(m.startswith("mistake:") for t in failed for m in t["tags"]), text
    assert "applied to the probabilities after the softmax" not in text, text
    # what was seen: the check's knobs, and what the answer equals
    assert "together, the answer equals the top-p set chosen from the probabilities of all the tokens" in text, text
    assert "top_k=5 and top_p=" in text, text
