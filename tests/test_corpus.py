"""The graded corpus: every correct submission gets full marks, every wrong one loses points,
and every catalogued mistake is named (see autograder/accuracy.py and tests/corpus/)."""
from __future__ import annotations

import pytest

from autograder import accuracy
from autograder.mistakes import CATALOGUE

ENTRIES = accuracy.load()


@pytest.fixture(scope="module")
def verdicts():
    return {v.entry.name: v for v in accuracy.grade_corpus(ENTRIES, jobs=2)}


@pytest.mark.parametrize("name", [e.name for e in ENTRIES])
def test_corpus_entry_is_graded_as_expected(verdicts, name):
    v = verdicts[name]
    assert v.ok, v.detail
    if v.entry.expect == "wrong" and v.entry.mistake:
        assert v.named, f"expected mistake {v.entry.mistake}: {v.detail}"


def test_corpus_declares_only_catalogued_mistakes():
    for e in ENTRIES:
        assert e.mistake is None or e.mistake in CATALOGUE, e.name


def test_accuracy_table(verdicts):
    text, stats = accuracy.table(list(verdicts.values()))
    assert stats["false_fails"] == 0 and stats["false_passes"] == 0, text
    assert stats["named_share"] >= 0.9, text
