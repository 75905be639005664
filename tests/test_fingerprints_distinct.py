"""Every hypothesis a check can name is told apart on that check's inputs (issue 23): when two
catalogued variants (two mistake ids, or two variants of one id in other words, such as dividing by
d_k or by sqrt(d_model)) give the same answer, the grader cannot know which the student has, and
its "In your code:" line may be wrong. Grading the reference solutions with compare.AUDIT set
computes every variant of every comparison; no two may coincide (unless both equal the reference)."""
from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pytest

from autograder.course import COURSE
from autograder.grading import compare
from autograder.grading.reference import load_reference

LESSONS = [lesson for lesson in COURSE if lesson[:2] <= "08" or lesson[:2] == "10"]


@pytest.mark.parametrize("lesson", LESSONS)
def test_hypotheses_do_not_coincide(lesson):
    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.student import LocalSubmission
    reference = load_reference(lesson)
    exercises = list(COURSE[lesson].exercises)
    plugin = GradingPlugin({lesson: LocalSubmission({e: getattr(reference, e) for e in exercises})},
                           exercises={lesson: set(exercises)})
    compare.AUDIT = []
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(io.StringIO()), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            run_checks(plugin, [lesson])
        found = list(compare.AUDIT)
    finally:
        compare.AUDIT = None
    lost = [t["name"] for t in plugin.results if t["score"] < t["max_score"]]
    assert not lost, lost
    assert any(True for _ in plugin.results)
    pairs = sorted({f"{a} == {b}   ({call})" for call, a, b in found})
    assert not pairs, "\n".join(pairs)
