"""Fingerprints of lessons 01, 02 and 04 (NumPy): each is the reference softmax, attention, mask or
worked_example function, passed in by the check, run with one change."""
from __future__ import annotations

import math

import numpy as np

from autograder.diagnose.fingerprints.surgery import Proxy, with_globals


def _max_variant(stable):
    """What the reference softmax's `np.max` reads as: nothing subtracted (softmax-unstable) or the
    whole array's maximum (softmax-global-max)."""
    if stable is False:
        return lambda a, axis=None, keepdims=False: 0
    return lambda a, axis=None, keepdims=False: np.max(a)


def np_softmax(softmax, x, axis=-1, *, stable=True):
    """The reference softmax over `axis` (None: over every element, as np.max and np.sum read it).
    stable=False: its `np.max` reads 0, so no maximum is subtracted before exp() (softmax-unstable);
    "global": its `np.max` is the whole array's, not each slice's (softmax-global-max)."""
    if stable is not True:
        softmax = with_globals(softmax, np=Proxy(np, max=_max_variant(stable)))
    with np.errstate(all="ignore"):
        return softmax(x, axis=axis)


# q is multiplied by this, so that the reference's division by sqrt(d_k) gives the mistaken scale
_Q_FACTOR = {"none": lambda d_k, d_other: math.sqrt(d_k),           # missing-scale: nothing divided
             "dk": lambda d_k, d_other: 1 / math.sqrt(d_k),          # divided by d_k
             "mul": lambda d_k, d_other: d_k,                        # multiplied by sqrt(d_k)
             "other": lambda d_k, d_other: math.sqrt(d_k / d_other)}  # divided by sqrt(d_v), sqrt(d_model)


def np_attention(attention, q, k, v, mask=None, *, scale="sqrt", d_other=None, axis=-1, stable=True,
                 mask_mode="before", fill="-inf", blocked_rows="zero", invert=False, transpose="swap",
                 int_invert=False):
    """The reference attention (output, weights) with the mistakes switched on:

    scale: the reference on q * sqrt(d_k) ("none"), q / sqrt(d_k) ("dk"), q * d_k ("mul"), or
        q * sqrt(d_k / d_other) ("other": divided by the sqrt of another size).
    transpose="T": the reference on keys that its swap of the last two axes turns into `k.T`.
    invert / int_invert: the reference with `~mask` / with the mask `~` makes of a 0/1 int mask read as
        booleans (mask-inverted, mask-int-invert).
    axis, stable: the reference attention calling a softmax over another axis, or without / with a
        global maximum (np_softmax); over another axis fully blocked rows stay -inf, as a student's
        softmax over the queries sees them.
    mask_mode="after": the reference without the mask, its softmax's output multiplied by the mask.
    fill="-1e9": the reference without the mask, its softmax reading the blocked scores as -1e9.
    blocked_rows="nan": the reference answer, but the rows whose keys are all blocked keep what the
        softmax gave them (NaN over the keys; over another axis, 0 or NaN) instead of zeros.
    """
    reference_softmax = attention.__globals__["softmax"]
    # without a division by np.sqrt (a float64 scalar) a student's float32 scores stay float32, and
    # float32 is where an unstable softmax overflows
    dtype = np.result_type(q, k) if scale in ("none", "dk") else None
    if scale != "sqrt":
        q = q * _Q_FACTOR[scale](q.shape[-1], d_other)
    if transpose == "T":
        k = np.swapaxes(k.T, -1, -2)
    allowed = None
    if mask is not None:
        allowed = ~(~np.asarray(mask)).astype(bool) if int_invert else np.asarray(mask).astype(bool)
        allowed = ~allowed if invert else allowed
    outside = mask is not None and (mask_mode == "after" or fill == "-1e9")   # masked around the softmax
    switched_axis, seen = axis, {}

    def softmax(s, axis=-1):   # what the reference's softmax(scores, axis=-1) becomes
        if outside and fill == "-1e9":
            s = np.where(allowed, s, -1e9)
        elif allowed is not None and not outside and switched_axis != -1:
            s = np.where(np.broadcast_to(allowed, s.shape).any(-1, keepdims=True), s, -np.inf)
        s = s if dtype is None else s.astype(dtype, copy=False)
        w = seen["w"] = np_softmax(reference_softmax, s, axis=switched_axis, stable=stable)
        return w * allowed if outside and mask_mode == "after" else w

    with np.errstate(all="ignore"):
        output, weights = with_globals(attention, softmax=softmax)(q, k, v, None if outside else allowed)
        if allowed is not None and not outside and blocked_rows == "nan":
            # the blocked rows keep what the softmax gave them (all -inf: NaN over the keys); their
            # output is NaN where such a weight is NaN and 0 otherwise, as `weights @ v` makes it
            has_key = np.broadcast_to(allowed, weights.shape).any(-1, keepdims=True)
            unguarded = seen["w"] if switched_axis != -1 else np.nan
            weights = np.where(has_key, weights, unguarded)
            output = np.where(has_key, output, np.where(np.isnan(weights).any(-1, keepdims=True), np.nan, 0.0))
    return output, weights


def causal(causal_mask, n, *, offset=0, upper=False):
    """The reference causal mask shifted by `offset` (-1: the diagonal blocked, +1: one future key
    let through), read from the reference mask one size larger; upper: the reference mask transposed."""
    if upper:
        return causal_mask(n).T
    if offset == 0:
        return causal_mask(n)
    bigger = causal_mask(n + 1)
    return bigger[1:, :-1] if offset == 1 else bigger[:-1, 1:]


def padding(padding_mask, lengths, max_len, *, on_queries=False):
    """The reference padding mask, (batch, 1, max_len); on_queries: its last two axes swapped
    (padding-wrong-axis: the padded queries are blocked instead of the padded keys)."""
    mask = padding_mask(lengths, max_len)
    return np.swapaxes(mask, -1, -2) if on_queries else mask


def worked_example(example, key, *, transposed=False, scale="sqrt", axis=-1):
    """Lesson 04: the reference worked_example()[key] (`example`, reading the setup cell's X, W_Q1, ...
    and D_K as globals) with those globals changed:

    transposed: every W matrix transposed (weights-transposed: X @ W.T).
    scale: D_K read as 1 ("none": nothing divided), D_K ** 2 ("dk": divided by d_k) or 1 / D_K ("mul").
    axis=-2 (weights and heads only): the reference run with X the identity and the queries and keys
        swapped gives the softmax of the transposed scores over each row, which transposed back is the
        softmax over each column. The reference has no softmax of its own to call (it is nested in
        worked_example), so the head is those weights @ V here: the one product this computes itself.
    """
    g = example.__globals__
    h = key[-1]
    changed = {"D_K": {"sqrt": g["D_K"], "none": 1, "dk": g["D_K"] ** 2, "mul": 1 / g["D_K"]}[scale]}
    if transposed:
        changed.update({f"{n}{i}": g[f"{n}{i}"].T for i in "12" for n in ("W_Q", "W_K", "W_V")})
    run = with_globals(example, **changed)
    if axis == -1 or not key.startswith(("weights", "head")):
        return run()[key]
    plain = run()                                   # Q, K, V as the other mistakes leave them
    q, k, v = (plain[f"{n}{h}"] for n in "QKV")
    swapped = with_globals(run, X=np.eye(q.shape[0]), **{f"{n}{i}": w for i in "12" for n, w in
                                                         (("W_Q", k), ("W_K", q), ("W_V", v))})()
    weights = swapped[f"weights{h}"].T
    return weights if key.startswith("weights") else weights @ v
