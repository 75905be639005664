"""Fingerprints of lesson 10 (NumPy): the reference combine_attention and flash_attention, passed in by
the check, run with one change.

The reference flash_attention merges each tile into what it has with its `combine_attention` (the
exercise-1 function), and the mistakes of this lesson live in that bookkeeping: a running sum or output
that is not rescaled when a tile raises the running maximum, tiles normalised alone and then added. So
those fingerprints run the reference with its `combine_attention` replaced by the mistaken merge, in the
(maximum, sum, output) form students write, fed with the reference's own tiles; the tile's maximum is
what the reference's tile lse, `max + np.log(sum)`, becomes with `np.log` reading 0. The other changes
are to the inputs (causal-top-left: the keys the top-left mask lets through; last-block-dropped: the
keys past the last full block cut off) or to the outputs (rows with no key NaN, the lse through exp
and log).
"""
from __future__ import annotations

import numpy as np

from autograder.diagnose.fingerprints.surgery import Proxy, with_globals


def _unguarded_logaddexp(a, b):
    """log(exp(a) + exp(b)) with the larger subtracted but not guarded: two -inf give -inf - -inf = NaN."""
    m = np.maximum(a, b)
    return m + np.log(np.exp(a - m) + np.exp(b - m))


def combine(combine_attention, out1, lse1, out2, lse2, *, which=0, lse="logaddexp", weights="shared-max"):
    """The reference combine_attention (`which` = 0: the output, 1: the lse) with one change:

    lse="exp": its np.logaddexp reads log(exp(a) + exp(b)), which overflows to inf above ~709 and gives
        -inf below ~-745 (lse-unstable).
    lse="nan-empty": its np.logaddexp subtracts the larger lse unguarded and its np.isfinite reads True,
        so two empty sets give -inf - -inf = NaN in the lse and the output (lse-unstable).
    weights="lse": the outputs weighted by lse_i / (lse1 + lse2) (combine-linear-weights).
    weights="exp": the outputs weighted by exp(lse_i) / (exp(lse1) + exp(lse2)), with no shared maximum
        subtracted: inf / inf or 0 / 0 once |lse| is large (combine-linear-weights).
    weights="unnormalised": the outputs weighted by exp(lse_i - m), m the larger lse, and not divided by
        the weights' sum (no catalogue id: described as observed).
    The weights are the mistake itself, so those two are written out here; the lse stays the reference's.
    """
    fn = combine_attention
    if lse == "exp":
        fn = with_globals(fn, np=Proxy(np, logaddexp=lambda a, b: np.log(np.exp(a) + np.exp(b))))
    elif lse == "nan-empty":
        fn = with_globals(fn, np=Proxy(np, logaddexp=_unguarded_logaddexp, isfinite=lambda x: np.ones_like(x, bool)))
    with np.errstate(all="ignore"):
        out, total = fn(out1, lse1, out2, lse2)
        if weights == "lse":
            out = ((lse1[..., None] * out1 + lse2[..., None] * out2) / (lse1 + lse2)[..., None])
        elif weights == "exp":
            e1, e2 = np.exp(lse1)[..., None], np.exp(lse2)[..., None]
            out = (e1 * out1 + e2 * out2) / (e1 + e2)
        elif weights == "unnormalised":
            m = np.maximum(lse1, lse2)
            m = np.where(np.isfinite(m), m, 0.0)[..., None]
            out = np.exp(lse1[..., None] - m) * out1 + np.exp(lse2[..., None] - m) * out2
    return (out, total)[which]


class _Running(np.ndarray):
    """A query block's output so far, carrying the mistaken merge's (max, sum, output, tiles) along
    the reference's loop (it passes what combine_attention returned back into the next call)."""
    state = None


def _mistaken_merge(real_lse, *, rescale_sum, rescale_output, per_block):
    """combine_attention as the mistaken (max, sum, output) bookkeeping does it. It is called with the
    tile's maximum in place of the tile's lse (np.log reads 0 in that run); `real_lse` holds the tile
    lses of an unchanged run, in the same order."""
    tiles = iter(real_lse)

    def merge(out, lse, tile_out, tile_max):
        tile_lse = next(tiles)
        if isinstance(out, _Running):
            m, total, acc, outs = out.state
        else:                                   # the query block's first tile
            m, total = np.full(tile_max.shape, -np.inf), np.zeros(tile_max.shape)
            acc, outs = np.zeros(tile_out.shape), []
        m_new = np.maximum(m, tile_max)
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        weight = np.exp(tile_lse - shift)       # the tile's sum of exp(score - new max)
        alpha = np.exp(m - shift)               # what the rescaling multiplies by
        total = (total * alpha if rescale_sum else total) + weight
        acc = (acc * alpha[..., None] if rescale_output else acc) + weight[..., None] * tile_out
        outs = outs + [tile_out]
        seen = total > 0
        value = np.where(seen[..., None], acc / np.where(seen, total, 1.0)[..., None], 0.0)
        if per_block == "sum":
            value = np.sum(outs, axis=0)
        elif per_block == "mean":
            value = np.mean(outs, axis=0)
        result = value.view(_Running)
        result.state = (m_new, total, acc, outs)
        return result, np.where(seen, m_new + np.log(np.where(seen, total, 1.0)), -np.inf)
    return merge


def _bookkeeping(flash_attention, q, k, v, causal, block_size, **mistakes):
    """The reference with its combine_attention replaced by the mistaken merge, fed with its own tiles."""
    real = flash_attention.__globals__["combine_attention"]
    tile_lses = []

    def record(out, lse, tile_out, tile_lse):
        tile_lses.append(tile_lse)
        return real(out, lse, tile_out, tile_lse)
    with_globals(flash_attention, combine_attention=record)(q, k, v, causal=causal, block_size=block_size)
    merge = _mistaken_merge(tile_lses, **mistakes)
    return with_globals(flash_attention, combine_attention=merge,
                        np=Proxy(np, log=lambda x: np.zeros_like(x)))(q, k, v, causal=causal, block_size=block_size)


def _causal_rows(flash_attention, q, k, v, n, block_size):
    """Causal attention with query i seeing keys j <= i + Lk - n for its first n rows and every key for
    the others: the reference's causal alignment on the first n queries, and its plain attention on the
    rest. With the keys cut to the first min(Lq, Lk) and n = min(Lq, Lk), that is the mask aligned at the
    first key (j <= i); with the keys cut to the last full block and n = Lq - (the keys cut), it is the
    full length's alignment on the keys that are left."""
    n = max(min(n, q.shape[-2]), 0)
    first = flash_attention(q[..., :n, :], k, v, causal=True, block_size=block_size)
    rest = flash_attention(q[..., n:, :], k, v, causal=False, block_size=block_size)
    return tuple(np.concatenate([a, b], axis=axis) for a, b, axis in zip(first, rest, (-2, -1)))


# where a wrong causal skip stops the loop over key blocks, for the query block [i0, i1) and the
# alignment shift = Lk - Lq: (the last key it may still start a block at, whether a block starting
# exactly there is dropped too)
_SKIPS = {"off-by-one": lambda i0, i1, shift: (i1 - 1 + shift, True),      # j0 >= i1 - 1 + Lk - Lq
          "first-query": lambda i0, i1, shift: (i0 + shift, False),        # j0 > i0 + Lk - Lq
          "no-offset": lambda i0, i1, shift: (i1 - 1, False)}              # j0 > i1 - 1


def skip_losses(lq, lk, block_size, rule):
    """((query block start, first key not computed), ...) for the query blocks whose rows lose keys
    under the wrong skip `rule`: two rules with the same losses give the same answer."""
    shift, lost = lk - lq, []
    for i0 in range(0, lq, block_size):
        i1 = min(i0 + block_size, lq)
        last, inclusive = _SKIPS[rule](i0, i1, shift)
        end = next((j0 for j0 in range(0, lk, block_size) if j0 > last or (inclusive and j0 == last)), lk)
        if i1 - 1 + shift >= end:
            lost.append((i0, end))
    return tuple(lost)


def _wrong_skip(flash_attention, q, k, v, block_size, rule):
    """Causal attention whose loop over key blocks stops where `rule` says (_SKIPS): the query block's
    rows that may see keys past the stop see every key before it, the others their causal keys. From
    the reference's causal answer and its plain attention over the keys before the stop."""
    lq, lk = q.shape[-2], k.shape[-2]
    shift = lk - lq
    out, lse = (np.array(a) for a in flash_attention(q, k, v, causal=True, block_size=block_size))
    for i0 in range(0, lq, block_size):
        i1 = min(i0 + block_size, lq)
        last, inclusive = _SKIPS[rule](i0, i1, shift)
        end = next((j0 for j0 in range(0, lk, block_size) if j0 > last or (inclusive and j0 == last)), lk)
        rows = np.arange(i0, i1)[np.arange(i0, i1) + shift >= end]      # they lose keys [end, i + shift]
        if not rows.size:
            continue
        if end == 0:
            out[..., rows, :], lse[..., rows] = 0.0, -np.inf
        else:
            out[..., rows, :], lse[..., rows] = flash_attention(q[..., rows, :], k[..., :end, :], v[..., :end, :],
                                                               causal=False, block_size=block_size)
    return out, lse


def nan_rows(lq, lk, block_size, rule):
    """(Lq,) bool: the causal rows that come out NaN when a guard is missing. rule "no-key": rows with
    no key, in the query blocks that compute a tile (an unguarded running maximum: its first tile);
    "tile": rows for which a computed tile has no visible key (an unguarded tile maximum)."""
    shift, rows = lk - lq, np.zeros(lq, bool)
    for i0 in range(0, lq, block_size):
        i1 = min(i0 + block_size, lq)
        starts = np.arange(0, max(min(lk, i1 + shift), 0), block_size)     # the key blocks it computes
        if starts.size:
            i = np.arange(i0, i1)
            rows[i0:i1] = (i + shift < 0) if rule == "no-key" else (starts[-1] > i + shift)
    return rows


def flash(flash_attention, q, k, v, causal=False, block_size=64, *, which=0, rescale_sum=True,
          rescale_output=True, per_block=None, top_left=False, drop_keys=False, drop_queries=False,
          lse="stable", skip=None, nan=None):
    """The reference flash_attention's output (`which` = 0) or lse (1) with the mistakes switched on:

    rescale_sum=False / rescale_output=False: the running sum / output is not multiplied by
        exp(old max - new max) when a tile raises the maximum (running-sum-not-rescaled,
        accumulator-not-rescaled).
    per_block="sum" | "mean": each tile's softmax normalised alone, and the tiles' outputs summed or
        averaged (normalised-per-block).
    top_left: the causal mask aligned at the first key (causal-top-left).
    drop_keys: the keys past the last full block are ignored (the reference on the keys before them);
    drop_queries: the queries past the last full block keep a zero output and lse -inf
        (last-block-dropped).
    lse="exp": the lse read back through log(exp(lse)): inf where it is above ~709 (lse-unstable);
    lse="nan-empty": rows with no key come out NaN, output and lse (masked-row-nan).
    skip="off-by-one" | "first-query" | "no-offset": the causal loop over key blocks stops at the wrong
        block (_SKIPS; off-by-one: causal-off-by-one).
    nan="no-key" | "tile": the rows nan_rows picks come out NaN, output and lse (masked-row-nan).
    """
    lq, lk = q.shape[-2], k.shape[-2]
    with np.errstate(all="ignore"):
        if drop_keys:
            cut = lk // block_size * block_size
            k, v = k[..., :cut, :], v[..., :cut, :]
        if not (rescale_sum and rescale_output) or per_block:
            out, total = _bookkeeping(flash_attention, q, k, v, causal, block_size, rescale_sum=rescale_sum,
                                      rescale_output=rescale_output, per_block=per_block)
        elif top_left and causal:
            n = min(lq, k.shape[-2])
            out, total = _causal_rows(flash_attention, q, k[..., :n, :], v[..., :n, :], n, block_size)
        elif drop_keys and causal:
            out, total = _causal_rows(flash_attention, q, k, v, lq - (lk - k.shape[-2]), block_size)
        elif skip and causal:
            out, total = _wrong_skip(flash_attention, q, k, v, block_size, skip)
        else:
            out, total = flash_attention(q, k, v, causal=causal, block_size=block_size)
        if drop_queries:
            kept = lq // block_size * block_size
            out, total = out.copy(), total.copy()
            out[..., kept:, :], total[..., kept:] = 0.0, -np.inf
        if lse == "exp":
            total = np.log(np.exp(total))
        elif lse == "nan-empty":
            empty = np.isneginf(total)
            out, total = np.where(empty[..., None], np.nan, out), np.where(empty, np.nan, total)
        if nan and causal:
            rows = nan_rows(lq, lk, block_size, nan)
            out, total = np.where(rows[:, None], np.nan, out), np.where(rows, np.nan, total)
    return (out, total)[which]
