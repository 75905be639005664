"""The references of lesson 10 agree with an independent oracle: naive attention that builds the whole
(Lq, Lk) score array, with its log-sum-exp computed separately here (a max-shifted sum, row by row in
plain Python floats for the small cases, and scipy's logsumexp for the large ones). combine_attention is
checked against the oracle over the union of two disjoint key sets (any split, any magnitude of lse,
empty sets); flash_attention against the oracle on every shape the checks use and more."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import logsumexp

from autograder.grading.reference import load_reference

L10 = "10_flash_attention"


@pytest.fixture(scope="module")
def ref():
    return load_reference(L10)


def oracle(q, k, v, allowed=None):
    """(output, lse) of softmax(q k^T / sqrt(d_k)) v; `allowed` (Lq, Lk) bool marks the pairs that may attend."""
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if allowed is not None:
        s = np.where(allowed, s, -np.inf)
    lse = logsumexp(s, axis=-1)                                   # -inf for a row with no key
    w = np.exp(s - np.where(np.isfinite(lse), lse, 0.0)[..., None])
    return w @ v, lse


def bottom_right(lq, lk):
    return np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq)


def lse_by_hand(scores):
    """log(sum(exp(x))) for one row of Python floats, the maximum taken out first."""
    finite = [x for x in scores if x != -math.inf]
    if not finite:
        return -math.inf
    m = max(finite)
    return m + math.log(sum(math.exp(x - m) for x in finite))


def assert_same(got, want, tol=1e-10):
    out, lse = got
    want_out, want_lse = want
    assert out.shape == want_out.shape and lse.shape == want_lse.shape
    assert np.array_equal(np.isneginf(lse), np.isneginf(want_lse))
    finite = np.isfinite(want_lse)
    np.testing.assert_allclose(lse[finite], want_lse[finite], rtol=tol, atol=tol)
    np.testing.assert_allclose(out, want_out, rtol=tol, atol=tol)
    assert not np.isnan(out).any()


def test_oracle_lse_by_hand():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    allowed = bottom_right(3, 5)
    allowed[0] = False
    _, lse = oracle(q, k, v, allowed)
    s = (q @ k.T / 2.0).tolist()
    for i in range(3):
        row = [x if allowed[i, j] else -math.inf for j, x in enumerate(s[i])]
        assert lse[i] == pytest.approx(lse_by_hand(row), abs=1e-12)
    assert lse[0] == -math.inf                        # row 0 has no key


CASES = [  # batch, Lq, Lk, d_k, d_v, causal, block_size
    ((), 5, 7, 4, 3, False, 2),
    ((), 70, 130, 8, 5, False, 64),
    ((2, 3), 70, 130, 16, 8, True, 16),
    ((2,), 130, 70, 8, 8, True, 64),          # Lq > Lk: the first 60 queries have no key
    ((), 1, 200, 16, 4, True, 64),             # one query over a cache
    ((), 100, 100, 8, 8, True, 64),
    ((3,), 64, 128, 8, 2, True, 32),           # multiples of the block
    ((), 200, 33, 4, 4, False, 1000),          # one block larger than everything
]


@pytest.mark.parametrize("batch, lq, lk, dk, dv, causal, bs", CASES)
def test_flash_attention_equals_naive(ref, batch, lq, lk, dk, dv, causal, bs):
    rng = np.random.default_rng(lq * 1000 + lk)
    q, k, v = rng.standard_normal(batch + (lq, dk)), rng.standard_normal(batch + (lk, dk)), rng.standard_normal(batch + (lk, dv))
    got = ref.flash_attention(q, k, v, causal=causal, block_size=bs)
    assert_same(got, oracle(q, k, v, bottom_right(lq, lk) if causal else None))


def test_flash_attention_large_scores_and_broadcast(ref):
    rng = np.random.default_rng(7)
    q = rng.standard_normal((2, 1, 40, 8)) * 40          # scores ~1e3: exp overflows without the maximum
    k, v = rng.standard_normal((1, 3, 90, 8)) * 40, rng.standard_normal((1, 3, 90, 5))
    got = ref.flash_attention(q, k, v, block_size=16)
    assert np.isfinite(got[1]).all() and np.abs(got[1]).max() > 800
    assert_same(got, oracle(q, k, v), tol=1e-9)


def test_flash_attention_leaves_inputs_alone_and_keeps_float32(ref):
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal((10, 4)).astype(np.float32) for _ in range(3))
    copies = [a.copy() for a in (q, k, v)]
    out, lse = ref.flash_attention(q, k, v, block_size=3)
    assert out.dtype == np.float32 and lse.dtype == np.float32
    assert all(np.array_equal(a, b) for a, b in zip((q, k, v), copies))


@pytest.mark.parametrize("scale", [1.0, 300.0, 3000.0])
@pytest.mark.parametrize("split", [1, 4, 9])
def test_combine_equals_attention_over_the_union(ref, scale, split):
    rng = np.random.default_rng(split)
    q, k, v = rng.standard_normal((2, 6, 8)) * scale, rng.standard_normal((2, 10, 8)), rng.standard_normal((2, 10, 3))
    keys = rng.permutation(10)
    first, second = keys[:split], keys[split:]
    a, b = oracle(q, k[:, first], v[:, first]), oracle(q, k[:, second], v[:, second])
    got = ref.combine_attention(a[0], a[1], b[0], b[1])
    assert_same(got, oracle(q, k, v), tol=1e-9)
    if scale == 3000.0:
        assert np.abs(got[1]).max() > 1e3          # exp(lse) overflows float64 here


def test_combine_with_lse_of_either_sign_and_empty_sets(ref):
    rng = np.random.default_rng(3)
    out1, out2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    lse1 = np.array([1e4, -1e4, -np.inf, -np.inf])
    lse2 = np.array([1e4 + math.log(3), -1e4 - 1.0, 2.0, -np.inf])
    out2[3] = 0.0
    out1[2:] = 0.0
    out, lse = ref.combine_attention(out1, lse1, out2, lse2)
    np.testing.assert_allclose(lse[:3], [1e4 + math.log(4), -1e4 + math.log(1 + math.exp(-1.0)), 2.0], rtol=1e-15)
    np.testing.assert_allclose(out[0], 0.25 * out1[0] + 0.75 * out2[0], rtol=1e-12)
    w = 1 / (1 + math.exp(-1.0))
    np.testing.assert_allclose(out[1], w * out1[1] + (1 - w) * out2[1], rtol=1e-12)
    np.testing.assert_array_equal(out[2], out2[2])            # the empty set weighs nothing
    assert lse[3] == -np.inf and np.array_equal(out[3], np.zeros(3))
