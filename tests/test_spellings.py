"""Every spelling of a right answer gets the marks: the checks pass only the arguments they need
(dropout only to the dropout checks), accept keyword or positional calls, extra optional
parameters, and a list or a tuple for (output, weights). The seed document's class loses only the
checks its -1e9 fill really fails."""
from __future__ import annotations

import contextlib
import io

import pytest

from autograder.classroom import accuracy
from autograder.grading.reference import load_reference
from autograder.report.results import by_exercise, mistakes_of
from autograder.selfcheck import run_selfcheck


def selfcheck(lesson, exercise, obj) -> tuple[float, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        score = run_selfcheck(lesson, exercise, obj)
    return score, out.getvalue()


def full_marks(lesson, exercise, obj):
    score, text = selfcheck(lesson, exercise, obj)
    assert "passed all" in text, text
    return score


L01, L05 = "01_scaled_dot_product_attention", "05_multi_head_attention"


def test_attention_may_return_a_list_and_take_extra_optional_parameters():
    ref = load_reference(L01)

    def as_list(q, k, v, mask=None):
        return list(ref.scaled_dot_product_attention(q, k, v, mask))

    def extra(q, k, v, mask=None, *, temperature=1.0, return_weights=True):
        return ref.scaled_dot_product_attention(q, k, v, mask)

    assert full_marks(L01, "scaled_dot_product_attention", as_list) == 5
    assert full_marks(L01, "scaled_dot_product_attention", extra) == 5
    # and a wrong answer spelled the same way still fails (the check can fail)
    wrong = lambda q, k, v, mask=None: [x * 1.01 for x in ref.scaled_dot_product_attention(q, k, v, mask)]  # noqa: E731
    assert selfcheck(L01, "scaled_dot_product_attention", wrong)[0] < 5


def subclass(**init_defaults):
    """The reference MultiHeadAttention with another constructor spelling."""
    base = load_reference(L05).MultiHeadAttention

    if init_defaults.get("dropout_required"):
        class Spelled(base):
            def __init__(self, d_model, num_heads, dropout):
                super().__init__(d_model, num_heads, dropout)
    else:
        class Spelled(base):
            def __init__(self, d_model, num_heads, dropout=0.0, bias=True, name="mha"):
                super().__init__(d_model, num_heads, dropout)
    return Spelled


@pytest.mark.parametrize("spelling", ["dropout_required", "extra_optional_parameters"])
def test_multi_head_attention_constructor_spellings(spelling):
    cls = subclass(**{spelling: True}) if spelling == "dropout_required" else subclass()
    assert full_marks(L05, "MultiHeadAttention", cls) == 10


def test_the_seed_class_loses_only_what_its_fill_really_fails(grade, tmp_path):
    """seeds/000's class: no dropout argument, `assert` for d_model % h. Only the checks that meet
    a fully blocked row fail, each naming masked-row-leak, in the grader and in the self-check."""
    entry = next(e for e in accuracy.load() if e.name == "wrong_05_seed000_fill_minus_1e9")
    path = tmp_path / f"{L05}.ipynb"
    path.write_text(accuracy.notebook_for(entry), encoding="utf-8")
    result = grade({L05: path})
    tests = [t for t in result["tests"] if "exercise:MultiHeadAttention" in t["tags"]]
    failed = [t for t in tests if t["status"] != "passed"]
    assert failed, "the -1e9 fill must lose the blocked-row check"
    assert all(mistakes_of(t) == ["masked-row-leak"] for t in failed), failed
    assert len(failed) < len(tests) - 5, [t["name"] for t in failed]   # dropout, ValueError, values all pass
    ours = by_exercise(result)[(L05, "MultiHeadAttention")]["score"]

    namespace: dict = {}
    exec(entry.cells["MultiHeadAttention"], namespace)
    score, text = selfcheck(L05, "MultiHeadAttention", namespace["MultiHeadAttention"])
    assert score == ours, text
    assert "masked-row-leak" in text
