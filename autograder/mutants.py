"""Known-buggy variants of the reference computations: the fingerprints of catalogued mistakes.

Each function below is attention written once with switches, one switch per way students get
it wrong. A check computes what a mistake WOULD return on its inputs (for example
`np_attention(q, k, v, scale="none")` for missing-scale) and compares the student's answer
with it. The correct setting of every switch is the default, and tests/ prove the defaults
agree with the reference, so a mutant differs from the reference by its one bug only.
"""
from __future__ import annotations

import math

import numpy as np

# --------------------------------------------------------------------------- NumPy (lessons 01-02)


def np_softmax(x, axis=-1, *, stable=True):
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    with np.errstate(all="ignore"):
        z = x - x.max(axis=axis, keepdims=True) if stable else x
        e = np.exp(z)
        return e / e.sum(axis=axis, keepdims=True)


def _scale(scores, d_k, how, d_other=None):
    return {
        "sqrt": lambda: scores / np.sqrt(d_k),
        "none": lambda: scores,
        "dk": lambda: scores / d_k,
        "mul": lambda: scores * np.sqrt(d_k),
        "other": lambda: scores / np.sqrt(d_other),   # sqrt of the wrong size (d_v, d_model)
    }[how]()


def np_attention(q, k, v, mask=None, *, scale="sqrt", d_other=None, axis=-1, stable=True,
                 mask_mode="before", fill="-inf", blocked_rows="zero", invert=False):
    """Attention with switches. Returns (output, weights).

    mask_mode: "before" (correct) or "after" (weights * mask, not renormalised)
    fill: "-inf" (with blocked_rows="zero" correct; "nan" leaves NaN) or "-1e9" (leaks)
    """
    with np.errstate(all="ignore"):
        scores = _scale(q @ np.swapaxes(k, -1, -2), q.shape[-1], scale, d_other)
        if mask is None:
            weights = np_softmax(scores, axis, stable=stable)
        else:
            allowed = np.asarray(mask).astype(bool)
            if invert:
                allowed = ~allowed
            allowed = np.broadcast_to(allowed, scores.shape)
            if mask_mode == "after":
                weights = np_softmax(scores, axis, stable=stable) * allowed
            elif fill == "-1e9":
                weights = np_softmax(np.where(allowed, scores, -1e9), axis, stable=stable)
            else:
                weights = np_softmax(np.where(allowed, scores, -np.inf), axis, stable=stable)
                if blocked_rows == "zero":
                    weights = np.where(allowed.any(axis=-1, keepdims=True), weights, 0.0)
        return weights @ v, weights


def causal(n, *, offset=0, upper=False):
    """tril with diagonal offset (0 correct, -1 blocks the diagonal, +1 leaks) or triu."""
    ones = np.ones((n, n), dtype=bool)
    return np.triu(ones, -offset) if upper else np.tril(ones, offset)


def padding(lengths, max_len, *, on_queries=False):
    lengths = np.asarray(lengths)
    keep = np.arange(max_len)[None, :] < lengths[:, None]   # (batch, max_len)
    return keep[:, :, None] if on_queries else keep[:, None, :]


# --------------------------------------------------------------------------- PyTorch (lessons 03-06)


def torch_attention(q, k, v, mask=None, *, scale="sqrt", d_other=None, invert=False,
                    fill="-inf", mask_mode="before", dropout=None):
    """Batched attention on tensors (..., L, d): returns (output, weights) in q's dtype."""
    import torch
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    scores = {"sqrt": scores / math.sqrt(d_k), "none": scores, "dk": scores / d_k,
              "mul": scores * math.sqrt(d_k), "other": scores / math.sqrt(d_other or d_k)}[scale]
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        allowed = torch.as_tensor(mask).bool()
        if invert:
            allowed = ~allowed
        allowed = allowed.expand_as(scores)
        if mask_mode == "after":
            weights = torch.softmax(scores, dim=-1) * allowed
        elif fill == "-1e9":
            weights = torch.softmax(scores.masked_fill(~allowed, -1e9), dim=-1)
        else:
            weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
            weights = torch.where(allowed.any(-1, keepdim=True), weights, torch.zeros_like(weights))
    if dropout is not None:
        weights = dropout(weights)
    return weights @ v, weights


def linear(x, p, name):
    return x @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def split(x, h, *, mixed=False):
    B, T, D = x.shape
    if mixed:   # heads-mixed: reshape straight to (B, h, T, d_k)
        return x.reshape(B, h, T, D // h)
    return x.reshape(B, T, h, D // h).transpose(1, 2)


def merge(x, *, mixed=False):
    B, h, T, d = x.shape
    if mixed:
        return x.reshape(B, T, h * d)
    return x.transpose(1, 2).reshape(B, T, h * d)


def torch_mha(p, query, key, value, mask=None, *, h, names=("w_q", "w_k", "w_v", "w_o"),
              heads_mixed=False, k_from="k", v_from="v", out_proj=True, scale="sqrt",
              invert=False, fill="-inf", mask_mode="before", first_head_only=False):
    """Multi-head attention from a parameter dict `p` (float64 tensors), with switches.

    names: the four projection names (lesson 06 uses q_project, ...).
    k_from / v_from: "k"/"v" (correct) or "q" (kv-reuse-query-projection).
    """
    wq, wk, wv, wo = names
    pick = {"q": wq, "k": wk, "v": wv}
    q = linear(query, p, wq)                                   # (B, Lq, D)
    k = linear(key, p, pick[k_from])                            # (B, Lk, D)
    v = linear(value, p, pick[v_from])                          # (B, Lk, D)
    D = q.shape[-1]
    qh, kh, vh = (split(t, h, mixed=heads_mixed) for t in (q, k, v))   # (B, h, L, d_k)
    m = None
    if mask is not None:
        import torch
        m = torch.as_tensor(mask).bool()
    heads, _ = torch_attention(qh, kh, vh, m, scale=scale, d_other=D, invert=invert,
                               fill=fill, mask_mode=mask_mode)         # (B, h, Lq, d_k)
    if first_head_only:
        heads = heads.clone()
        heads[:, 1:] = 0
    concat = merge(heads, mixed=heads_mixed)                   # (B, Lq, D)
    return linear(concat, p, wo) if out_proj else concat
