"""The references of lessons 03-06 agree with independent oracles: F.scaled_dot_product_attention,
nn.MultiheadAttention with copied weights, and (lesson 04) numbers worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from autograder.diagnose import fingerprints
from autograder.grading.checking import padding_pattern
from autograder.grading.reference import load_reference


def test_self_attention_head_matches_sdpa():
    ref = load_reference("03_self_attention_head")
    torch.manual_seed(0)
    head = ref.SelfAttentionHead(10, 4).double().eval()
    x = torch.randn(3, 6, 10, dtype=torch.float64)
    causal = torch.tril(torch.ones(6, 6, dtype=torch.bool))
    with torch.no_grad():
        q, k, v = head.w_q(x), head.w_k(x), head.w_v(x)
        torch.testing.assert_close(head(x), F.scaled_dot_product_attention(q, k, v), rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(head(x, causal), F.scaled_dot_product_attention(q, k, v, attn_mask=causal),
                                   rtol=1e-10, atol=1e-12)
        blocked = causal.clone().repeat(3, 1, 1)
        blocked[1, 2] = False
        out = head(x, blocked)
        assert torch.all(out[1, 2] == 0) and not torch.isnan(out).any()


# Lesson 04, by hand. X = [[1,2],[3,4],[5,6]]; each product below was multiplied out on paper.
K1 = [[3, 1], [7, 3], [11, 5]]            # X @ [[1,1],[1,0]]
Q2 = [[1, 3], [3, 7], [5, 11]]            # X @ [[1,1],[0,1]]
K2 = [[2, 3], [4, 7], [6, 11]]            # X @ [[0,1],[1,1]]
QK1 = [[5, 13, 21], [13, 33, 53], [21, 53, 85]]       # Q1 K1^T with Q1 = X
QK2 = [[11, 25, 39], [27, 61, 95], [43, 97, 151]]     # Q2 K2^T


def test_worked_example_by_hand():
    ref = load_reference("04_worked_example")
    got = ref.worked_example()
    X = [[1, 2], [3, 4], [5, 6]]
    np.testing.assert_array_equal(got["Q1"], X)
    np.testing.assert_array_equal(got["V1"], [[2, 1], [4, 3], [6, 5]])   # columns of X swapped
    np.testing.assert_array_equal(got["V2"], X)
    np.testing.assert_array_equal(got["K1"], K1)
    np.testing.assert_array_equal(got["Q2"], Q2)
    np.testing.assert_array_equal(got["K2"], K2)
    for i, qk in ((1, QK1), (2, QK2)):
        np.testing.assert_allclose(got[f"scores{i}"], np.array(qk) / math.sqrt(2), rtol=1e-14)
        # each softmax row written out: w_j = 1 / sum_m exp(s_m - s_j)
        s = np.array(qk) / math.sqrt(2)
        for r in range(3):
            for j in range(3):
                w = 1.0 / sum(math.exp(s[r, m] - s[r, j]) for m in range(3))
                assert abs(got[f"weights{i}"][r, j] - w) < 1e-12
    # head 1, row 1: weights (e^-a, e^-b, 1)/(1 + e^-a + e^-b) with gaps a = 16/sqrt2, b = 8/sqrt2
    a, b = 16 / math.sqrt(2), 8 / math.sqrt(2)
    z = 1 + math.exp(-a) + math.exp(-b)
    row = (math.exp(-a) * np.array([2, 1]) + math.exp(-b) * np.array([4, 3]) + np.array([6, 5])) / z
    np.testing.assert_allclose(got["head1"][0], row, rtol=1e-12)
    np.testing.assert_allclose(got["head1"][0], [5.992989, 4.992989], atol=1e-6)
    np.testing.assert_allclose(got["concat"], np.hstack([got["head1"], got["head2"]]))
    assert ref.published_errors() == {"K1", "Q2", "K2", "scores1", "weights1", "weights2", "head1", "head2", "concat"}


def copy_into_torch(q, k, v, o, d_model, h):
    oracle = nn.MultiheadAttention(d_model, h, batch_first=True, dtype=torch.float64).eval()
    with torch.no_grad():
        oracle.in_proj_weight.copy_(torch.cat([q.weight, k.weight, v.weight]))
        oracle.in_proj_bias.copy_(torch.cat([q.bias, k.bias, v.bias]))
        oracle.out_proj.weight.copy_(o.weight)
        oracle.out_proj.bias.copy_(o.bias)
    return oracle


@pytest.mark.parametrize("b,lq,lk,d_model,h", [(2, 4, 6, 8, 2), (3, 5, 5, 16, 4), (1, 3, 7, 12, 3)])
def test_multi_head_attention_matches_torch(b, lq, lk, d_model, h):
    ref = load_reference("05_multi_head_attention")
    torch.manual_seed(b + lq)
    mha = ref.MultiHeadAttention(d_model, h).double().eval()
    oracle = copy_into_torch(mha.w_q, mha.w_k, mha.w_v, mha.w_o, d_model, h)
    q = torch.randn(b, lq, d_model, dtype=torch.float64)
    kv = torch.randn(b, lk, d_model, dtype=torch.float64)
    keep = torch.arange(lk)[None, :] < torch.randint(1, lk + 1, (b,))[:, None]       # (b, lk)
    with torch.no_grad():
        torch.testing.assert_close(mha(q, kv, kv), oracle(q, kv, kv)[0], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(mha(q, kv, kv, keep[:, None, None, :]),
                                   oracle(q, kv, kv, key_padding_mask=~keep)[0], rtol=1e-10, atol=1e-12)
        if lq == lk:
            causal = torch.tril(torch.ones(lq, lq, dtype=torch.bool))
            torch.testing.assert_close(mha(q, q, q, causal), oracle(q, q, q, attn_mask=~causal)[0],
                                       rtol=1e-10, atol=1e-12)


def test_multi_head_attention_rejects_indivisible_width():
    ref = load_reference("05_multi_head_attention")
    with pytest.raises(ValueError, match="divisible"):
        ref.MultiHeadAttention(10, 3)


def test_mha_mutant_defaults_match_the_reference():
    ref = load_reference("05_multi_head_attention")
    torch.manual_seed(4)
    mha = ref.MultiHeadAttention(8, 2).double().eval()
    p = {n: t.detach() for n, t in mha.named_parameters()}
    q, kv = torch.randn(2, 3, 8, dtype=torch.float64), torch.randn(2, 5, 8, dtype=torch.float64)
    mask = torch.from_numpy(padding_pattern([5, 2], 5)[:, None])
    with torch.no_grad():
        torch.testing.assert_close(fingerprints.torch_mha(ref.MultiHeadAttention, p, q, kv, kv, mask, h=2),
                                   mha(q, kv, kv, mask))


def test_fixed_class_matches_torch_and_buggy_does_not():
    ref = load_reference("06_debugging_projection_reuse")
    torch.manual_seed(5)
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    for cls, should_match in ((ref.FixedMultiHeadAttention, True), (ref.BuggyMultiHeadAttention, False)):
        layer = cls(8, 2, 0.0).double().eval()
        oracle = copy_into_torch(layer.q_project, layer.k_project, layer.v_project, layer.o_project, 8, 2)
        with torch.no_grad():
            same = torch.allclose(layer(x), oracle(x, x, x)[0], atol=1e-10)
        assert same == should_match, cls.__name__


def test_reference_test_projections_tells_them_apart():
    ref = load_reference("06_debugging_projection_reuse")
    ref.test_projections(ref.FixedMultiHeadAttention)
    with pytest.raises(AssertionError):
        ref.test_projections(ref.BuggyMultiHeadAttention)
