"""Lesson 10 after a student/teacher review: the fingerprints of a wrong causal skip reproduce the loops
students write (tests/corpus/wrong_10_review_skip_*), the few-queries memory problem is one that a
(block, Lk) array cannot fit while a tile can, the lesson's own names in its fixes, the wording of a
NaN or an infinity where the reference has none, and no NumPy warning from the reference.
The graded verdicts themselves are the corpus's (tests/test_corpus.py, lesson-10 entries)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from autograder.checks import test_10_flash_attention as checks
from autograder.classroom import accuracy
from autograder.diagnose import fingerprints, root_cause
from autograder.grading.differences import where_different
from autograder.grading.reference import load_reference

L10 = "10_flash_attention"


@pytest.fixture(scope="module")
def ref():
    return load_reference(L10)


def student_flash(entry_name: str):
    """flash_attention as the corpus entry writes it (with its combine_attention, if it has one)."""
    entry = next(e for e in accuracy.load() if e.name == entry_name)
    namespace = {"np": np, "math": math}
    exec(entry.cells.get("combine_attention", ""), namespace)
    exec(entry.cells["flash_attention"], namespace)
    return namespace["flash_attention"]


CASES = [(16, 17, 8), (16, 28, 8), (24, 33, 8), (21, 71, 16), (49, 24, 16), (1, 41, 8), (40, 40, 8)]


@pytest.mark.parametrize("entry, rule", [("wrong_10_review_skip_off_by_one", "off-by-one"),
                                         ("wrong_10_review_skip_first_query", "first-query"),
                                         ("wrong_10_review_skip_no_offset", "no-offset")])
def test_wrong_skip_fingerprint_is_the_students_loop(ref, entry, rule):
    fn, rng, differs = student_flash(entry), np.random.default_rng(0), 0
    for lq, lk, bs in CASES:
        q, k, v = checks.qkv(rng, (2,), lq, lk, 8, 4)
        with np.errstate(all="ignore"):
            got = fn(q, k, v, causal=True, block_size=bs)
        for which in (0, 1):
            mutant = fingerprints.flash(ref.flash_attention, q, k, v, True, bs, which=which, skip=rule)
            np.testing.assert_allclose(got[which], mutant, rtol=1e-10, atol=1e-10, err_msg=f"{(lq, lk, bs)}")
        right = ref.flash_attention(q, k, v, causal=True, block_size=bs)[1]
        differs += not np.allclose(got[1], right, rtol=1e-10, atol=1e-10)
        assert bool(fingerprints.flash_skip_losses(lq, lk, bs, rule)) == (not np.allclose(got[1], right)), (lq, lk, bs)
    assert differs     # the cases show the mistake


def test_the_causal_checks_first_case_tells_the_three_stops_apart():
    losses = [fingerprints.flash_skip_losses(16, 28, 8, rule) for rule in checks.SKIPS]
    assert losses[0] == () and losses[1] and losses[2] and losses[1] != losses[2]


def test_tile_nan_fingerprint_is_the_literal_step_2(ref):
    fn, rng = student_flash("wrong_10_review_tile_max_unguarded"), np.random.default_rng(1)
    for lq, lk, bs in [(16, 28, 8), (49, 24, 16), (21, 71, 16)]:
        q, k, v = checks.qkv(rng, (), lq, lk, 8, 4)
        with np.errstate(all="ignore"):
            got = fn(q, k, v, causal=True, block_size=bs)
        for which in (0, 1):
            mutant = fingerprints.flash(ref.flash_attention, q, k, v, True, bs, which=which, nan="tile")
            assert np.isnan(mutant).any()
            np.testing.assert_allclose(got[which], mutant, rtol=1e-10, atol=1e-10)


def test_few_queries_problem_refuses_a_block_of_rows_not_a_tile():
    rng = np.random.default_rng(2)
    q, k, v = checks.narrow_inputs(rng)
    lq, lk = q.shape[-2], k.shape[-2]
    b = checks.NARROW_BLOCK
    assert b * lk * 8 >= 1.25 * checks.MEMORY_LIMIT           # one (block, Lk) float64 array
    assert lq * lk * 8 > checks.MEMORY_LIMIT                   # the naive (Lq, Lk) one, causal or not
    assert b * b * 8 * 20 < checks.MEMORY_LIMIT                # a tile, and the arrays made of it
    assert b < lq <= b + 16 and q.nbytes + k.nbytes + v.nbytes < checks.MEMORY_LIMIT


def test_lesson10_fixes_speak_the_lessons_names():
    def text(mistake):
        return root_cause.summary(L10, "x", [(mistake, None)])
    assert "safe = np.where(np.isfinite(lse), lse, 0.0)" in text("lse-unstable")
    assert "np.where(np.isfinite(m), m, 0.0)" in text("masked-row-nan") and "naive_attention" in text("masked-row-nan")
    for mistake in ("running-sum-not-rescaled", "accumulator-not-rescaled"):
        assert "`acc" not in text(mistake) and "(acc" not in text(mistake) and "a = a * alpha" in text(mistake)
    assert "out1 *=" in text("input-modified") and "x -= x.max()" not in text("input-modified")
    assert "j0 > i1 - 1 + Lk - Lq" in text("causal-off-by-one")


def test_nan_and_infinity_are_said_as_they_are():
    said = where_different(np.array([np.nan, 1.0]), np.array([-np.inf, 1.0]), 1e-10, 1e-10)
    assert "NaN where the reference is not NaN" in said and "finite" not in said
    said = where_different(np.array([-np.inf, 1.0]), np.array([0.5, 1.0]), 1e-10, 1e-10)
    assert "1 value is -inf where the reference is finite" in said


def test_the_reference_is_called_without_warnings(ref):
    empty = np.full(3, -np.inf)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checks.quietly(ref.combine_attention, np.zeros((3, 2)), empty, np.zeros((3, 2)), empty)
        after = warnings.filters[:]
    assert not caught and after


def test_lesson10_explanations_close_their_brackets():
    """A root cause's lines keep their brackets balanced (tests/test_corpus.py): "[i0, i1)" was one."""
    from autograder.diagnose.mistakes import LESSON_FIX
    texts = [text for (mistake, lesson), pair in LESSON_FIX.items() if lesson == "10" for text in pair if text]
    assert texts and all(t.count("(") == t.count(")") for t in texts)
