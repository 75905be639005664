"""Lesson 06's test_projections is graded on classes written for the checks (projection_subjects):
each correct variant is proven against nn.MultiheadAttention, each wrong one shown to differ, and
a student's test that keys on anything but behaviour (name, call order, answer caching) fails."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from autograder.checks import projection_subjects as subjects
from autograder.report.results import by_exercise
from conftest import notebook_with

LESSON = "06_debugging_projection_reuse"


def build(style, routing, seed=0):
    scope = {"nn": nn, "torch": torch, "F": F, "math": math}
    exec(subjects.source(style, routing, seed), scope)
    return scope[subjects.CLASS_NAME]


def oracle_for(layer, d_model, h):
    mha = nn.MultiheadAttention(d_model, h, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([layer.q_project.weight, layer.k_project.weight, layer.v_project.weight]))
        mha.in_proj_bias.copy_(torch.cat([layer.q_project.bias, layer.k_project.bias, layer.v_project.bias]))
        mha.out_proj.weight.copy_(layer.o_project.weight)
        mha.out_proj.bias.copy_(layer.o_project.bias)
    return mha


@pytest.mark.parametrize("style", sorted(subjects.STYLES))
def test_correct_variants_equal_nn_multiheadattention(style):
    torch.manual_seed(0)
    layer = build(style, "correct")(12, 3, 0.0).eval()
    x = torch.randn(2, 5, 12)                                         # (B, T, D)
    mask = torch.ones(2, 5, 5, dtype=torch.bool).tril()              # (B, T, T), True = attend
    mask[1, 3] = False                                                # a fully blocked row
    expected, _ = oracle_for(layer, 12, 3)(x, x, x, attn_mask=~mask[:, None].expand(2, 3, 5, 5).reshape(6, 5, 5))
    expected[1, 3] = layer.o_project.bias                             # the contract: blocked rows read nothing
    got = layer(x, mask)
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()
    assert torch.allclose(layer(x), oracle_for(layer, 12, 3)(x, x, x)[0], atol=1e-5)


@pytest.mark.parametrize("style", sorted(subjects.STYLES))
@pytest.mark.parametrize("routing", ["buggy", "keys-only", "values-only"])
def test_wrong_variants_differ_and_ignore_a_projection(style, routing):
    torch.manual_seed(0)
    layer = build(style, routing)(8, 2, 0.0).eval()
    x = torch.randn(2, 4, 8)
    assert not torch.allclose(layer(x), oracle_for(layer, 8, 2)(x, x, x)[0], atol=1e-4)
    unused = {"buggy": "k_project", "keys-only": "k_project", "values-only": "v_project"}[routing]
    before = layer(x)
    with torch.no_grad():
        getattr(layer, unused).weight.add_(1.0)
    assert torch.allclose(layer(x), before)


def test_variants_share_a_name_and_differ_in_salt():
    a = subjects.variants("correct", 1)
    b = subjects.variants("buggy", 1)
    assert {src.split("class ")[1].split("(")[0] for _, src in a + b} == {subjects.CLASS_NAME}
    assert len({src for _, src in a + b}) == len(a) + len(b)
    assert [s for s, _ in subjects.variants("correct", 1)] == [s for s, _ in a]   # fixed per submission


CHEATS = {
    # keys on the lesson's class name
    "by_name": '''
def test_projections(mha_class):
    assert "Buggy" not in mha_class.__name__, "buggy by name"
''',
    # fails every second call: the classes come in some order, maybe that is enough
    "by_call_order": '''
CALLS = [0]
def test_projections(mha_class):
    CALLS[0] += 1
    assert CALLS[0] % 2, "every second class"
''',
    # remembers the classes it has already seen
    "by_memory": '''
SEEN = []
def test_projections(mha_class):
    SEEN.append(mha_class)
    assert len(SEEN) < 3, "the later classes are the buggy ones"
''',
}


@pytest.mark.slow
@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_a_test_that_does_not_look_at_behaviour_earns_nothing_like_full_marks(grade, tmp_path, cheat):
    path = notebook_with(LESSON, {"test_projections": CHEATS[cheat]}, tmp_path / "s")
    entry = by_exercise(grade({LESSON: path}))[(LESSON, "test_projections")]
    assert entry["score"] == 0, entry


def test_a_missed_subject_is_described_in_a_students_words():
    """A student never sees the subjects' style names ('loop', 'fused'): a missed subject is described
    by how it computes attention (a student audit read "written in the 'loop' style")."""
    import types
    from autograder.checks import test_06_debugging_projection_reuse as t06
    from autograder.grading.checking import Mismatch
    assert set(t06.WRITTEN) == set(subjects.STYLES)
    for style in subjects.STYLES:
        student = types.SimpleNamespace(_test_not_implemented=None,
                                        _subject_verdicts={"buggy": [(style, "passed")]})
        with pytest.raises(Mismatch) as caught:
            t06.check_catches(student, "buggy", "keys and values use the query projection")
        assert t06.WRITTEN[style] in str(caught.value) and "style" not in str(caught.value), str(caught.value)
