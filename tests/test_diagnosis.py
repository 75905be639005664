"""Diagnosis: combined mistakes are each named, blocked rows are judged on their own, and an
exercise's feedback gives the root cause first with no paragraph twice (compare.py, root_cause.py)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.diagnose import root_cause
from autograder.diagnose import fingerprints
from autograder.grading.checking import MASK_MISTAKES, attention_mutants, blocked_rows, scale_variants
from autograder.grading.compare import Fingerprints, Mismatch, Variant, expect_array
from autograder.diagnose.mistakes import CATALOGUE
from autograder.grading.plugin import explain_failure
from autograder.grading.reference import load_reference
from autograder.run.errors import StudentError


ATT = load_reference("02_masking").scaled_dot_product_attention          # what the fingerprints change
SOFTMAX = load_reference("01_scaled_dot_product_attention").softmax
MHA = load_reference("05_multi_head_attention").MultiHeadAttention


def qkv(seed=0, batch=(2,), lq=4, lk=5, d=4):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(batch + (lq, d)), rng.standard_normal(batch + (lk, d)),
            rng.standard_normal(batch + (lk, 3)))


def named(exc_info) -> set[str]:
    return set(exc_info.value.mistakes)


def test_two_mistakes_in_one_answer_are_both_named():
    q, k, v = qkv()
    mask = np.ones((2, 4, 5), dtype=bool)
    mask[0, 1] = False
    got = fingerprints.np_attention(ATT, q, k, v, mask, scale="none", blocked_rows="nan")[0]
    with pytest.raises(Mismatch) as err:
        expect_array(got, fingerprints.np_attention(ATT, q, k, v, mask)[0], call="attention",
                     mutants=attention_mutants(ATT, q, k, v, mask, which="output"), blocked=blocked_rows(mask, (2, 4, 5)))
    assert named(err) == {"missing-scale", "masked-row-nan"}


def test_three_mistakes_at_once():
    q, k, v = qkv(1)
    mask = np.tril(np.ones((4, 5), dtype=bool))
    got = fingerprints.np_attention(ATT, q, k, v, mask, scale="dk", mask_mode="after", axis=-2)[1]
    with pytest.raises(Mismatch) as err:
        expect_array(got, fingerprints.np_attention(ATT, q, k, v, mask)[1], call="weights",
                     mutants=attention_mutants(ATT, q, k, v, mask, which="weights"))
    assert named(err) == {"wrong-scale", "mask-after-softmax", "softmax-wrong-axis"}


def test_blocked_rows_are_judged_on_their_own():
    """NaN on a blocked row is named even when the other rows are wrong in no catalogued way."""
    q, k, v = qkv(2)
    mask = np.ones((2, 4, 5), dtype=bool)
    mask[1, 2] = False
    expected = fingerprints.np_attention(ATT, q, k, v, mask)[0]
    got = expected * 1.5
    got[1, 2] = np.nan
    with pytest.raises(Mismatch) as err:
        expect_array(got, expected, call="attention", mutants=attention_mutants(ATT, q, k, v, mask, which="output"),
                     blocked=blocked_rows(mask, (2, 4, 5)))
    assert named(err) == {"masked-row-nan"}


def test_a_mask_check_passes_when_only_another_mistake_explains_the_answer():
    q, k, v = qkv(3)
    mask = np.tril(np.ones((4, 5), dtype=bool))
    got = fingerprints.np_attention(ATT, q, k, v, mask, scale="none")[0]
    expected = fingerprints.np_attention(ATT, q, k, v, mask)[0]
    fp = attention_mutants(ATT, q, k, v, mask, which="output")
    expect_array(got, expected, call="attention", mutants=fp, about=MASK_MISTAKES)   # the mask is honoured
    with pytest.raises(Mismatch) as err:
        expect_array(got, expected, call="attention", mutants=fp)
    assert named(err) == {"missing-scale"}


def test_scale_variants_name_the_size_used():
    details = {v.detail for v in scale_variants(4, [("d_model", 24)])}
    assert "the scores are divided by sqrt(d_model) instead of sqrt(d_k)" in details
    # d_model = d_k ** 2 (issue 23): dividing by d_k and by sqrt(d_model) are one answer; the detail says
    # both, and no second variant claims to know which
    same = scale_variants(4, [("d_model", 16)])
    assert not any(v.switches == (("d_other", 16), ("scale", "other")) for v in same)
    assert any("d_k = sqrt(d_model)" in v.detail for v in same)
    assert not any(v.switches == (("d_other", 4), ("scale", "other")) for v in scale_variants(4, [("d_v", 4)]))


def test_new_mutant_switches_change_only_what_they_say():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5)) * 2
    np.testing.assert_allclose(fingerprints.np_softmax(SOFTMAX, x, 0, stable="global"), fingerprints.np_softmax(SOFTMAX, x, 0))
    big = np.array([[1000.0, 999.0], [0.0, 1.0]])
    assert np.isnan(fingerprints.np_softmax(SOFTMAX, big, stable="global")[1]).all()       # underflow to 0/0
    assert np.isfinite(fingerprints.np_softmax(SOFTMAX, big)).all()
    q, k, v = qkv(5, batch=())
    np.testing.assert_allclose(fingerprints.np_attention(ATT, q, k, v, transpose="T")[0], fingerprints.np_attention(ATT, q, k, v)[0])
    p = {f"{n}.{w}": torch.randn(*((8, 8) if w == "weight" else (8,)), dtype=torch.float64)
         for n in ("w_q", "w_k", "w_v", "w_o") for w in ("weight", "bias")}
    x3 = torch.randn(2, 5, 8, dtype=torch.float64)
    torch.testing.assert_close(fingerprints.torch_mha(MHA, p, x3, x3, x3, h=2, k_in="query", v_in="query"),
                               fingerprints.torch_mha(MHA, p, x3, x3, x3, h=2))          # same in self-attention
    y3 = torch.randn(2, 5, 8, dtype=torch.float64)
    assert not torch.allclose(fingerprints.torch_mha(MHA, p, x3, y3, y3, h=2, k_in="query"), fingerprints.torch_mha(MHA, p, x3, y3, y3, h=2))


def test_combinations_never_reuse_a_switch():
    fp = Fingerprints(lambda **kw: None, [Variant.of("missing-scale", None, scale="none"),
                                          Variant.of("wrong-scale", None, scale="dk"),
                                          Variant.of("masked-row-nan", None, blocked_rows="nan")])
    combos = fp.combinations()
    assert all(len({k for v in c for k, _ in v.switches}) == len(c) for c in combos)
    assert len(combos) == 3 + 2          # three alone, two pairs, no triple


def results(lesson, exercise, failures):
    tests = []
    for found, line in failures:
        entry = {"name": f"{lesson}: check", "score": 0.0, "max_score": 1.0, "status": "failed",
                 "output": str(Mismatch(line, found=found)), "tags": [f"lesson:{lesson}", f"exercise:{exercise}"]}
        root_cause.note(entry, Mismatch(line, found=found))
        tests.append(entry)
    root_cause.summarise(tests)
    return tests


def test_summary_first_and_no_paragraph_twice():
    tests = results("05_multi_head_attention", "MultiHeadAttention", [
        ([("wrong-scale", "the scores are divided by sqrt(d_model) instead of sqrt(d_k)")], "self-attention differs"),
        ([("wrong-scale", "the scores are divided by sqrt(d_model) instead of sqrt(d_k)"),
          ("masked-row-nan", "fully blocked rows come out NaN")], "masked differs"),
        ([], "something else")])
    first = tests[0]["output"]
    assert first.startswith("Root causes (2 mistakes, fix each):\n1. Scores are scaled by the wrong amount [wrong-scale].")
    assert "sqrt(d_model) instead of sqrt(d_k)" in first and "w_o's bias" in first
    assert first.endswith("\n\n[wrong-scale] self-attention differs")
    assert tests[1]["output"] == "[wrong-scale, masked-row-nan] masked differs"     # what it saw, the causes' ids
    assert tests[2]["output"] == "something else\n(This may follow from wrong-scale and masked-row-nan; fix them first.)"
    paragraphs = [p for t in tests for p in t["output"].split("\n") if len(p) > 60]
    assert len(paragraphs) == len(set(paragraphs))
    assert sum(t["output"].count("Fix:") for t in tests) == 2             # one per mistake, in the first check
    assert tests[1]["tags"][-2:] == ["mistake:wrong-scale", "mistake:masked-row-nan"]
    assert all("_found" not in t for t in tests)
    assert [root_cause.own_part(t["output"]) for t in tests] == [
        (["wrong-scale"], "self-attention differs", False), (["wrong-scale", "masked-row-nan"], "masked differs", False),
        (None, "something else", True)]


def test_one_mistake_is_said_in_three_lines():
    tests = results("01_scaled_dot_product_attention", "scaled_dot_product_attention", [
        ([("missing-scale", "the scores are not divided by sqrt(d_k) at all")], "weights differ"),
        ([("missing-scale", "the scores are not divided by sqrt(d_k) at all")], "output differs")])
    head, body = root_cause.split_summary(tests[0]["output"])
    assert head.splitlines()[0] == "Root cause: Scores are not scaled [missing-scale]."
    assert head.splitlines()[1].startswith("In your code: the scores are not divided by sqrt(d_k) at all.")
    assert head.splitlines()[2].startswith("Fix: Divide the scores by `np.sqrt(d_k)`") and len(head.splitlines()) == 3
    assert body == "[missing-scale] weights differ" and tests[1]["output"] == "[missing-scale] output differs"


def test_an_untouched_exercise_says_not_started_and_keeps_its_tags():
    tests = []
    for _ in range(3):
        exc = StudentError({"type": "NotImplementedError", "message": ""})
        output, mistake, _ = explain_failure(exc, "softmax")
        entry = {"name": "01: check", "score": 0.0, "max_score": 1.0, "status": "failed", "output": output,
                 "tags": ["lesson:01_scaled_dot_product_attention", "exercise:softmax", f"mistake:{mistake}"]}
        root_cause.note(entry, exc)
        tests.append(entry)
    root_cause.summarise(tests)
    assert [t["output"] for t in tests] == [root_cause.NOT_STARTED] * 3
    assert all(t["tags"][-1] == "mistake:not-implemented" for t in tests)
    assert "raise NotImplementedError()" in root_cause.NOT_STARTED


def test_lesson_01_feedback_has_no_heads():
    tests = results("01_scaled_dot_product_attention", "scaled_dot_product_attention",
                    [([(m, None)], "differs") for m in ("wrong-scale", "missing-scale", "softmax-wrong-axis",
                                                         "softmax-unstable", "batched-transpose")])
    text = "\n".join(t["output"] for t in tests).lower()
    assert "head" not in text and "w_o" not in text


@pytest.mark.parametrize("mistake", sorted(CATALOGUE))
def test_every_mistake_has_its_page_text(mistake):
    m = CATALOGUE[mistake]
    assert m.title and m.explanation and m.hint and m.recognised_by


def test_an_uncatalogued_deviation_is_reported_never_passes_and_does_not_hide_others():
    """A variant with no catalogue id (published code: a ReLU, a LayerNorm inside the module) lets the
    mistakes beside it be named; an answer it explains fails even a check about other mistakes."""
    q, k, v = qkv(3)
    mask = np.ones((2, 4, 5), dtype=bool)
    mask[0, 2] = False
    rows = blocked_rows(mask, (2, 4, 5))

    def run(double=False, **kw):
        out = fingerprints.np_attention(ATT, q, k, v, mask, **kw)[0]
        return out * 2 + 1 if double else out

    fp = Fingerprints(run, [Variant.of(None, "every output is doubled plus one", double=True),
                            Variant.of("masked-row-leak", None, fill="-1e9")])
    expected = run()
    with pytest.raises(Mismatch) as err:
        expect_array(run(double=True), expected, call="attention", mutants=fp, blocked=rows, about=MASK_MISTAKES)
    assert err.value.found == [] and err.value.extra == ["every output is doubled plus one"]
    assert "Also, every output is doubled plus one." in str(err.value)
    with pytest.raises(Mismatch) as err:
        expect_array(run(double=True, fill="-1e9"), expected, call="attention", mutants=fp, blocked=rows,
                     about=MASK_MISTAKES)
    assert named(err) == {"masked-row-leak"} and err.value.extra == ["every output is doubled plus one"]


def test_uncatalogued_deviations_are_said_once_in_the_summary():
    extra = "there is a ReLU after every projection (w_o included), which the module must not have"
    tests = []
    for found in ([("masked-row-leak", None)], []):
        exc = Mismatch("differs" + f"\nAlso, {extra}.", found=found, extra=[extra])
        entry = {"name": "05: check", "score": 0.0, "max_score": 1.0, "status": "failed", "output": str(exc),
                 "tags": ["lesson:05_multi_head_attention", "exercise:MultiHeadAttention"]}
        root_cause.note(entry, exc)
        tests.append(entry)
    root_cause.summarise(tests)
    assert "2. Not in the catalogue: there is a ReLU" in tests[0]["output"]
    assert tests[0]["output"].endswith("\n\n[masked-row-leak, point 2] differs")
    assert tests[1]["output"] == "[point 2] differs"
    assert sum(t["output"].count("after every projection") for t in tests) == 1


def test_a_type_error_inside_the_body_is_not_a_wrong_signature():
    """Only a TypeError about the exercise's own arguments is fixed by keeping the stub's signature;
    one its body raised (`e.sum(keepdim=True)`) is reported as the exception it is, with its place."""
    def explain(message):
        return explain_failure(StudentError({"type": "TypeError", "message": message,
                                             "traceback": "  cell softmax, line 3, in softmax"}), "softmax")
    assert explain("softmax() got an unexpected keyword argument 'axis'")[1] == "wrong-signature"
    text, mistake, _ = explain("_sum() got an unexpected keyword argument 'keepdim'")
    assert mistake is None and "keepdim" in text and "signature" not in text
    assert explain_failure(StudentError({"type": "TypeError", "message": "MultiHeadAttention.forward() takes 2 "
                                         "positional arguments but 5 were given"}), "MultiHeadAttention")[1] \
        == "wrong-signature"


def test_a_mistake_an_earlier_exercise_explained_is_referred_to():
    """repeat_kv tiles the heads and CausalSelfAttention, which calls it, fails the same way: the
    explanation and the fix are said for repeat_kv; CausalSelfAttention names the mistake and refers to it."""
    tests = []
    for exercise, detail in (("CausalSelfAttention", "key/value heads are tiled"), ("repeat_kv", "the heads are tiled")):
        exc = Mismatch("differs", found=[("kv-repeat-order", detail)])
        entry = {"name": "08: check", "score": 0.0, "max_score": 1.0, "status": "failed", "output": str(exc),
                 "tags": ["lesson:08_fast_attention", f"exercise:{exercise}"]}
        root_cause.note(entry, exc)
        tests.append(entry)
    root_cause.summarise(tests)
    attention, repeat = (t["output"] for t in tests)
    assert repeat.startswith("Root cause: Key/value heads tiled instead of repeated in a row [kv-repeat-order].\n")
    assert "Fix: Use `torch.repeat_interleave" in repeat
    assert attention == ("Root cause: Key/value heads tiled instead of repeated in a row [kv-repeat-order], as in "
                         "repeat_kv above.\nIn your code: key/value heads are tiled.\nFix: the same as for repeat_kv "
                         "above.\n\n[kv-repeat-order] differs")
