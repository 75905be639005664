"""The NumPy reference solutions agree with independent oracles (PyTorch and hand computation)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from autograder.diagnose import fingerprints
from autograder.grading.reference import load_reference


@pytest.fixture(scope="module")
def l01():
    return load_reference("01_scaled_dot_product_attention")


@pytest.fixture(scope="module")
def l02():
    return load_reference("02_masking")


def sdpa_oracle(q, k, v, mask=None):
    t = [torch.from_numpy(np.ascontiguousarray(a)) for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(np.broadcast_to(mask, q.shape[:-1] + (k.shape[-2],)).copy())
    return F.scaled_dot_product_attention(*t, attn_mask=m).numpy()


def test_softmax_by_hand(l01):
    got = l01.softmax(np.array([0.0, math.log(2.0), math.log(5.0)]))
    np.testing.assert_allclose(got, [1 / 8, 2 / 8, 5 / 8], rtol=1e-12)


def test_softmax_matches_torch_including_large_inputs(l01):
    rng = np.random.default_rng(1)
    for shape, axis, scale in [((4, 7), -1, 1.0), ((3, 4, 5), 0, 3.0), ((2, 6), 1, 1e4)]:
        x = rng.standard_normal(shape) * scale
        np.testing.assert_allclose(l01.softmax(x, axis=axis), torch.softmax(torch.from_numpy(x), dim=axis).numpy(),
                                   rtol=1e-10, atol=1e-300)


def test_attention_by_hand(l01):
    # one query, two keys, d_k = 2: scores (1/sqrt 2, 0); weights (sigmoid(1/sqrt 2), 1 - that)
    q = np.array([[1.0, 0.0]]); k = np.array([[1.0, 0.0], [0.0, 1.0]]); v = np.array([[1.0, 2.0], [3.0, 4.0]])
    w0 = 1.0 / (1.0 + math.exp(-1.0 / math.sqrt(2.0)))
    out, w = l01.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(w, [[w0, 1 - w0]], rtol=1e-12)
    np.testing.assert_allclose(out, [[w0 * 1 + (1 - w0) * 3, w0 * 2 + (1 - w0) * 4]], rtol=1e-12)
    assert abs(w0 - 0.669762) < 1e-6


@pytest.mark.parametrize("batch,lq,lk,dk,dv", [((), 3, 5, 4, 6), ((2,), 4, 4, 8, 2), ((2, 3), 1, 7, 16, 5)])
def test_attention_matches_torch(l01, l02, batch, lq, lk, dk, dv):
    rng = np.random.default_rng(lq * 100 + lk)
    q, k, v = (rng.standard_normal(batch + s) for s in ((lq, dk), (lk, dk), (lk, dv)))
    expected = sdpa_oracle(q, k, v)
    for ref in (l01, l02):
        np.testing.assert_allclose(ref.scaled_dot_product_attention(q, k, v)[0], expected, rtol=1e-10, atol=1e-12)


def test_masks_match_independent_constructions(l02):
    for n in (1, 4, 7):
        np.testing.assert_array_equal(l02.causal_mask(n), torch.tril(torch.ones(n, n, dtype=torch.bool)).numpy())
        assert l02.causal_mask(n).dtype == np.bool_
    lengths, max_len = [3, 0, 5], 5
    expected = np.zeros((3, 1, 5), dtype=bool)
    for b, n in enumerate(lengths):
        for j in range(max_len):
            expected[b, 0, j] = j < n
    np.testing.assert_array_equal(l02.padding_mask(lengths, max_len), expected)


def test_masked_attention_matches_torch_and_zeroes_blocked_rows(l02):
    rng = np.random.default_rng(7)
    q, k, v = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 6, 4)), rng.standard_normal((2, 6, 3))
    mask = np.ones((2, 5, 6), dtype=bool)
    mask[0, :, 4:] = False
    mask[1, 2, :] = False           # a fully blocked row
    out, w = l02.scaled_dot_product_attention(q, k, v, mask)
    oracle = sdpa_oracle(q, k, v, mask)
    live = mask.any(-1)
    np.testing.assert_allclose(out[live], oracle[live], rtol=1e-10, atol=1e-12)
    assert np.all(out[~live] == 0) and np.all(w[~live] == 0)
    assert not np.isnan(out).any()
    assert np.all(w[~mask] == 0)
    np.testing.assert_allclose(w[live].sum(-1), 1.0, rtol=1e-12)


def test_mutant_defaults_are_the_reference(l02):
    """A fingerprint with no mistake switched on gives the reference's answer (it runs the reference)."""
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    mask = rng.random((2, 4, 5)) > 0.4
    mask[1, 0] = False
    for m in (None, mask):
        got = fingerprints.np_attention(l02.scaled_dot_product_attention, q, k, v, m)
        ref = l02.scaled_dot_product_attention(q, k, v, m)
        np.testing.assert_allclose(got[0], ref[0], atol=1e-12)
        np.testing.assert_allclose(got[1], ref[1], atol=1e-12)
    np.testing.assert_array_equal(fingerprints.causal(l02.causal_mask, 6), l02.causal_mask(6))
    np.testing.assert_array_equal(fingerprints.padding(l02.padding_mask, [2, 4], 4), l02.padding_mask([2, 4], 4))
