"""Doing nothing earns nothing (issue 23): for every exercise of lessons 01-08, answers whose output
is constant, all zero, all False, empty, independent of the input (or a module returning its input
or a bias) score exactly 0. The family lives in tests/degenerate.py; a new check that one of them
passes fails here. tests/test_corpus.py grades the same answers through the sandbox."""
from __future__ import annotations

import contextlib
import io
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import degenerate  # noqa: E402

from autograder.course import COURSE  # noqa: E402

CORPUS = Path(__file__).parent / "corpus"
FAMILY = list(degenerate.family())


def grade(lesson: str, grade_id: str, source: str) -> list[dict]:
    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.student import LocalSubmission
    namespace = {"__name__": "student"}
    exec(degenerate.PRELUDE + source, namespace)
    plugin = GradingPlugin({lesson: LocalSubmission({grade_id: namespace[grade_id]})},
                           exercises={lesson: {grade_id}})
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(io.StringIO()), \
            contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        run_checks(plugin, [lesson])
    return plugin.results


@pytest.mark.parametrize("lesson,grade_id,kind,source", FAMILY,
                         ids=[f"{lesson[:2]}-{gid}-{kind}" for lesson, gid, kind, _ in FAMILY])
@pytest.mark.slow
def test_doing_nothing_scores_zero(lesson, grade_id, kind, source):
    results = grade(lesson, grade_id, source)
    assert results, f"{lesson} {grade_id}: no check ran"
    passed = [f"{t['name']} ({t['score']:g})" for t in results if t["score"] > 0]
    assert not passed, f"{grade_id} answering {kind!r} earns points: {passed}"


def test_every_exercise_has_stand_ins():
    for lesson_id in degenerate.STANDINS:
        assert set(degenerate.STANDINS[lesson_id]) == set(COURSE[lesson_id].exercises), lesson_id
    for lesson_id, lesson in COURSE.items():
        if lesson_id[:2] <= "08":
            assert lesson_id in degenerate.STANDINS, lesson_id
    kinds = {kind for _, _, kind, _ in FAMILY}
    assert {"zeros", "constant", "empty", "all-false"} <= kinds


def test_corpus_holds_the_family():
    """tests/corpus/degenerate_*.py is this family, file for file (regenerate with
    `python -c "import degenerate; degenerate.write_corpus('corpus')"` in tests/)."""
    # (lesson 09's degenerate entries are written by hand and graded in tests/test_degenerate_09.py)
    files = {p.stem: p.read_text(encoding="utf-8") for p in CORPUS.glob("degenerate_*.py")
             if not p.stem.startswith("degenerate_09_")}
    want = {degenerate.corpus_name(lesson, gid, kind): degenerate.corpus_text(lesson, gid, kind)
            for lesson, gid, kind, _ in FAMILY}
    assert files == want
