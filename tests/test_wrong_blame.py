"""Issue 31: what the student's code did is said as what it did, never as another mistake or as
the autograder's fault. Graded through the real sandbox (the `grade` fixture)."""
from __future__ import annotations

import json

import pytest

from autograder.course import COURSE
from conftest import ROOT, notebook_with


def _solution_cell(lesson: str, grade_id: str) -> str:
    nb = json.loads((ROOT / "solutions" / f"{lesson}.ipynb").read_text())
    return next("".join(c["source"]) for c in nb["cells"]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


def _by_exercise(result: dict, exercise: str) -> list[dict]:
    return [t for t in result["tests"] if f"exercise:{exercise}" in t["tags"]]


def _graded_beside_solutions(grade, folder, lesson: str, exercise: str, source: str) -> list[dict]:
    """The checks of `exercise` with `source` as its cell, the lesson's other exercises solved;
    asserts that those others all pass (one exercise's failure costs no other its points)."""
    others = [e for e in COURSE[lesson].exercises if e != exercise]
    cells = {exercise: source, **{e: _solution_cell(lesson, e) for e in others}}
    result = grade({lesson: notebook_with(lesson, cells, folder)})
    for other in others:
        tests = _by_exercise(result, other)
        assert tests and all(t["status"] == "passed" for t in tests), [t["output"] for t in tests]
    tests = _by_exercise(result, exercise)
    assert tests and all(t["score"] == 0 for t in tests), tests
    return tests


OVERSIZE = {
    # (the answer, what the message must say it was)
    "a dict with a million keys": ("dict.fromkeys(range(1_000_000), 0)", "a dict of 1,000,000 items"),
    "300,000 small arrays": ("[np.zeros(2, dtype=bool)] * 300_000", "a list of 300,000 items"),
    "an array of 100 MB": ("np.zeros(13_000_000)", "a float64 array of shape (13000000,), 99.2 MB"),
}


@pytest.mark.slow
@pytest.mark.parametrize("answer", sorted(OVERSIZE))
def test_an_answer_too_large_for_the_wire_is_said_as_such_for_its_exercise_only(grade, tmp_path, answer):
    """[R U D] A reply past the wire's limits was refused by the grader as an unreadable frame, the
    child was ended, and the student read "[process-exit] The code called sys.exit/os._exit": a
    mistake they never made. The child now answers the refusal as an error of the call, which says
    what the limit is and what was returned; the other exercises are graded as usual."""
    source, what = OVERSIZE[answer]
    for test in _graded_beside_solutions(grade, tmp_path / "student", "02_masking", "padding_mask",
                                         f"def padding_mask(lengths, max_len):\n    return {source}\n"):
        assert not any(tag.startswith("mistake:process-exit") for tag in test["tags"]), test
        assert "too large" in test["output"] and what in test["output"], test["output"]
        assert "exit" not in test["output"] and "not your fault" not in test["output"], test["output"]


NOT_MODULES = {
    "__new__ returns a str": ("class MultiHeadAttention:\n"
                              "    def __new__(cls, *args, **kwargs):\n"
                              "        return 'a string'\n", "returned a str, not an nn.Module"),
    "__new__ returns an array": ("class MultiHeadAttention(nn.Module):\n"
                                 "    def __new__(cls, *args, **kwargs):\n"
                                 "        return np.zeros(3)\n", "returned a NumPy array, not an nn.Module"),
    "a plain class": ("class MultiHeadAttention:\n"
                      "    def __init__(self, d_model, num_heads, dropout=0.0):\n"
                      "        self.d_model = d_model\n"
                      "    def forward(self, query, key, value, mask=None):\n"
                      "        return query\n", "returned a MultiHeadAttention, not an nn.Module"),
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(NOT_MODULES))
def test_a_graded_class_whose_instances_are_not_modules_is_the_students_failure(grade, tmp_path, kind):
    """[R U D] A graded class whose instances are not nn.Modules (its __new__ returns a str or an
    array, or it does not derive from nn.Module) made the checks call module methods on a string,
    and the student read "the autograder failed on this check (not your fault)". It is the
    student's failure, said plainly, and 0 on those checks."""
    source, said = NOT_MODULES[kind]
    for test in _graded_beside_solutions(grade, tmp_path / "student", "05_multi_head_attention",
                                         "MultiHeadAttention", source):
        assert "not your fault" not in test["output"] and "please report" not in test["output"], test["output"]
        assert said in test["output"], test["output"]
