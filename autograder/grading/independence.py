"""Each exercise earns its own points (issue 32): an exercise that calls another graded function of
the student's, which is wrong, is graded with the reference's answers in that function's place.

A check of such an exercise runs as it is first, with a stand-in (run/executor.py, Answers) that
passes every call to the student's own helper and notes its arguments. Only when the check fails
and the student's helper gives other answers than the reference on those very arguments is the
check run again, the stand-in now answering from a table of the reference's answers (data computed
here, in the grader: the reference's code never reaches the student's process). Calls the table
does not hold go to the student's helper and are noted, and answered in the next round (an
exercise's later calls depend on the earlier answers), for a bounded number of rounds. The check's
line then says, in one sentence, which helper was replaced.

generate's next_token_probs has a stand-in of its own (checks/test_09_generating_text.py): a
sampled generation's logits come from the grader's model, so its table is built before the first
call, and the student kit can hold its answers.
"""
from __future__ import annotations

import warnings

import numpy as np

from autograder.course import COURSE
from autograder.i18n import N_
from autograder.grading.compare import Mismatch, as_numpy
from autograder.run.errors import StudentError

ROUNDS = 12                     # rounds of answers (a helper that raises, a stub, lets one new call through per round)
MAX_CALLS = 64                  # arguments the grader answers per helper and check (Answers notes no more)

# lessons whose helper pairs are handled elsewhere (09) or are not calls (06: a test the student writes)
_ELSEWHERE = {"06_debugging_projection_reuse", "09_generating_text"}


def helpers(lesson: str, exercise: str) -> list[str]:
    """The lesson's graded functions before `exercise`, which its code may call."""
    if lesson in _ELSEWHERE or lesson not in COURSE:
        return []
    names = COURSE[lesson].exercises
    earlier = names[:names.index(exercise)] if exercise in names else ()
    return [n for n in earlier if n[:1].islower() and not n.startswith("test_")]


def sentence(names: list[str], exercise: str) -> str:
    which = " and ".join(names)
    return (N_("{which} is wrong (its own checks say how), so {exercise} was graded with the reference "
               "{which} in its place.") if len(names) == 1 else
            N_("{which} are wrong (their own checks say how), so {exercise} was graded with the reference "
               "{which} in their place.")).format(which=which, exercise=exercise)


def _agrees(got, expected) -> bool:
    try:
        a, b = as_numpy(got), as_numpy(expected)
    except Exception:     # noqa: BLE001 - anything that is not an array is compared as it is
        return got == expected
    if isinstance(a, (tuple, list)) or isinstance(b, (tuple, list)):
        return isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) \
            and all(_agrees(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() \
            and all(_agrees(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biufc" and b.dtype.kind in "biufc":
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=1e-4, atol=1e-5, equal_nan=True))
    return bool(np.array_equal(a, b))


def _answers(student, reference, name, calls, judge=True) -> tuple[list, bool]:
    """(table entries with the reference's answers for `calls`, whether the student's own `name`
    answered any of them otherwise). A helper that changes its input is wrong here, and that is
    said by its own checks, not by this exercise's (the plugin's pending findings are off)."""
    submission = student._submission
    pending, submission.pending = getattr(submission, "pending", None), None
    try:
        return _judge(student, reference, name, calls, judge)
    finally:
        submission.pending = pending


def _judge(student, reference, name, calls, judge) -> tuple[list, bool]:
    table, wrong = [], False
    for args in calls[:MAX_CALLS]:
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):   # the reference's, not the student's
                warnings.simplefilter("ignore")
                expected = getattr(reference, name)(*args)
        except LookupError:          # the student kit holds no answer for these arguments
            continue
        except Exception:            # noqa: BLE001 - arguments the reference refuses: not ours to answer
            continue
        table.append({"args": list(args), "output": expected})
        if judge and not wrong:
            try:
                wrong = not _agrees(getattr(student, name)(*args), expected)
            except (StudentError, Mismatch):
                wrong = True
    return table, wrong


def run_check(run, student, reference, lesson: str, exercise: str):
    """Run the check `run()` (a thunk; it is called again for each round, with the same inputs),
    grading `exercise` with the reference's answers in place of its wrong helpers."""
    names = helpers(lesson, exercise)
    if not names or student is None or reference is None:
        return run()
    try:
        return run()
    except (Mismatch, StudentError) as err:
        first = err
    # again, every helper behind a stand-in: its table is empty (the student's own answers, its
    # calls noted) until the student's answers to those calls are found wrong
    tables: dict = {n: [] for n in names}
    wrong: list[str] = []
    outcome = first
    for _ in range(ROUNDS):
        report: dict = {}
        try:
            with student._substituted(exercise, tables, report):
                run()
            outcome = None
        except (Mismatch, StudentError) as err:
            outcome = err
        new = False
        for name in names:
            calls = (report.get(name) or {}).get("calls") or []
            entries, is_wrong = _answers(student, reference, name, calls, judge=name not in wrong)
            if is_wrong:
                wrong.append(name)
            if name in wrong:
                fresh = [e for e in entries if not any(_agrees(e["args"], t["args"]) for t in tables[name])]
                fresh = fresh[:max(0, MAX_CALLS - len(tables[name]))]
                tables[name] += fresh
                new |= bool(fresh)
        if not new:
            break
    if not wrong:
        raise first
    student._note(sentence([n for n in names if n in wrong], exercise))
    if outcome is not None:
        raise outcome
