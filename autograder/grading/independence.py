"""Each exercise earns its own points (issue 32): an exercise that calls another graded function of
the student's, which is wrong, is graded with the reference's answers in that function's place.

A check of such an exercise runs as it is first. Only when it fails is it run again, once, with
every helper behind a stand-in (run/substitute.py, Asks) that answers each call with the student's
own helper and asks the grader about it: the arguments and that answer, as data. The grader
computes the reference's answer to those very arguments here (`answerer`) and replies with it when
the student's differs (or raised, or wrote into its arguments), else lets the student's stand. The
reference's code never reaches the student's process, and no call needs a second run: a stub that
raises NotImplementedError on every call is answered in the same pass. The check's line then says,
in one sentence, which helper was replaced.

The student kit holds no reference: there `Replay.answer_call` (grading/recorded.py) answers from
the helper calls recorded at release (the reference's and the corpus's exercises on the public
inputs), matched to float32 rounding; a call it does not hold keeps the student's answer.

generate's next_token_probs has a stand-in of its own (checks/test_09_generating_text.py): a
sampled generation's logits come from the grader's model, so its table is built before the call.
"""
from __future__ import annotations

import warnings

import numpy as np

from autograder.course import COURSE
from autograder.i18n import N_
from autograder.grading.compare import Mismatch, as_numpy
from autograder.run.errors import StudentError

MAX_ASKS = 4096                 # questions answered per check run (Asks asks no more; isolate/sandbox.py neither)
RECORDING: list | None = None   # at release (deliver/kit/record.py): every answer given, for the kit

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


def reference_answer(reference, lesson: str, name: str, args: list, kwargs: dict):
    """The reference's `name(*args, **kwargs)`: computed (the course), or recorded at release (the
    kit's Replay)."""
    recorded = getattr(type(reference), "answer_call", None)
    expected = reference.answer_call(name, args, kwargs) if recorded else getattr(reference, name)(*args, **kwargs)
    if RECORDING is not None:
        RECORDING.append((lesson, name, args, kwargs, expected))
    return expected


def answerer(reference, lesson: str, names: list[str], wrong: list[str]):
    """answer(question) for the stand-ins of `names` (run/substitute.py, Asks): {"value": the reference's
    answer} when the student's helper answered these arguments otherwise (its name is added to
    `wrong`), else {}. Arguments the reference refuses, or the kit holds no answer for, keep the
    student's answer."""
    asked = [0]

    def answer(question: dict) -> dict:
        name, args, kwargs = question.get("name"), question.get("args"), question.get("kwargs", {})
        asked[0] += 1
        if name not in names or not isinstance(args, list) or not isinstance(kwargs, dict) or asked[0] > MAX_ASKS:
            return {}
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):   # the reference's, not the student's
                warnings.simplefilter("ignore")
                expected = reference_answer(reference, lesson, name, args, kwargs)
        except Exception:      # noqa: BLE001 - arguments the reference refuses, or no recorded answer
            return {}
        if name in wrong or question.get("wrong"):     # judged wrong already: the reference's answer
            if name not in wrong:                        # (said so by the stand-in: one of ours asked)
                return {}
            return {"value": expected}
        if "answer" in question and not question.get("changed") and _agrees(question["answer"], expected):
            return {}
        if name not in wrong:
            wrong.append(name)
        return {"value": expected}
    return answer


def run_check(run, student, reference, lesson: str, exercise: str):
    """Run the check `run()` (a thunk; it is called again once, with the same inputs, if it fails),
    grading `exercise` with the reference's answers in place of its wrong helpers."""
    names = helpers(lesson, exercise)
    if not names or student is None or reference is None:
        return run()
    try:
        return run()
    except (Mismatch, StudentError) as err:
        first = err
    # again, once, every helper behind a stand-in that asks the grader about each call, answered from
    # the reference the check compared with: lesson 04's, under a course secret, reads hidden inputs
    # (checks/test_04_worked_example.py, example), and the fixture's would answer for the public ones
    reference = getattr(student, "_compared_with", None) or reference
    wrong: list[str] = []
    try:
        with student._substituted(exercise, {n: None for n in names}, answerer(reference, lesson, names, wrong)):
            run()
        outcome = None
    except (Mismatch, StudentError) as err:
        outcome = err
    if not wrong:
        raise first
    student._note(sentence([n for n in names if n in wrong], exercise))
    if outcome is not None:
        raise outcome
