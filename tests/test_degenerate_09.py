"""Doing nothing earns nothing (issue 25): constant or input-independent answers to lesson 09's
exercises (tests/corpus/degenerate_09_*) score 0 on every check of their exercise, not just lose
some points. Among them: a generate that calls the model exactly as the contract says and returns
zeros, and an apply_rope that always raises the ValueError the odd-size check asks for."""
from __future__ import annotations

import pytest

from autograder.classroom import accuracy

ENTRIES = [e for e in accuracy.load() if e.name.startswith("degenerate_09_")]


@pytest.fixture(scope="module")
def results(corpus_results):
    """The entries' results from the corpus's grading (conftest.corpus_results: graded once per run)."""
    return {e.name: corpus_results[e.name] for e in ENTRIES}


def test_there_are_degenerate_answers_for_every_exercise():
    assert {ex for e in ENTRIES for ex in e.wrong} == {"apply_rope", "next_token_probs", "generate"}
    assert len(ENTRIES) >= 6


@pytest.mark.slow
@pytest.mark.parametrize("name", [e.name for e in ENTRIES])
def test_degenerate_answer_scores_zero_on_every_check(results, name):
    entry = next(e for e in ENTRIES if e.name == name)
    (exercise,) = entry.wrong
    tests = [t for t in results[name]["tests"] if f"exercise:{exercise}" in t["tags"]]
    assert tests, results[name]
    assert all(t["score"] == 0 for t in tests), [(t["name"], t["score"]) for t in tests if t["score"]]
