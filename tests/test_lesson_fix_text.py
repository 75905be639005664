"""The "Fix:" line speaks the lesson's own API (issue 23): a PyTorch lesson's fix never tells the
student to use NumPy, a NumPy lesson's never PyTorch, and lesson 07's mask fixes are about
nn.MultiheadAttention's attn_mask (`~mask.bool()`, `repeat_interleave` over heads), not lesson 02's
`np.where` or lesson 05's `mask[:, None]`."""
from __future__ import annotations

import re

import pytest

from autograder.classroom import accuracy
from autograder.diagnose import root_cause
from autograder.diagnose.mistakes import CATALOGUE, LESSON_FIX

NUMPY_LESSONS = ("01", "02", "04", "10")
TORCH_LESSONS = ("03", "05", "06", "07", "08")


def fix(mistake: str, lesson: str) -> str:
    text = root_cause.summary(lesson, "x", [(mistake, None)])
    return re.search(r"^\s*Fix: (.*)$", text, re.M).group(1)


def named_in(lesson_prefix: str) -> set[str]:
    """The ids the corpus expects for a lesson: the mistakes its students are told about."""
    return {m for e in accuracy.load() if e.lesson.startswith(lesson_prefix) for m in e.mistakes}


@pytest.mark.parametrize("lesson", TORCH_LESSONS)
def test_torch_lessons_fix_with_torch(lesson):
    bad = [(mistake, fix(mistake, lesson + "_x")) for mistake in sorted(named_in(lesson))]
    bad = [(m, text) for m, text in bad if "np." in text]
    assert not bad, bad


@pytest.mark.parametrize("lesson", NUMPY_LESSONS)
def test_numpy_lessons_fix_with_numpy(lesson):
    bad = [(mistake, fix(mistake, lesson + "_x")) for mistake in sorted(named_in(lesson))]
    bad = [(m, text) for m, text in bad if "torch" in text or "masked_fill" in text or "self." in text]
    assert not bad, bad


def test_lesson_07_mask_fixes_speak_nn_multiheadattention():
    inverted, misbroadcast = fix("mask-inverted", "07_transformer_block"), fix("mask-misbroadcast", "07_transformer_block")
    assert "~mask.bool()" in inverted and "np.where" not in inverted
    assert "repeat_interleave" in misbroadcast and "mask[:, None]" not in misbroadcast
    assert fix("mask-inverted", "02_masking") != inverted


def test_lesson_fix_entries_name_catalogued_mistakes():
    assert LESSON_FIX and all(m in CATALOGUE for m, _ in LESSON_FIX)
