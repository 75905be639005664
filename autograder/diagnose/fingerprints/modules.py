"""Fingerprints of lessons 03, 05 and 06 (PyTorch modules)."""
from __future__ import annotations

import math

# --------------------------------------------------------------------------- PyTorch (lessons 03-06)


def torch_attention(q, k, v, mask=None, *, scale="sqrt", d_other=None, invert=False,
                    fill="-inf", mask_mode="before", dropout=None, blocked_rows="zero", transpose="swap",
                    axis=-1):
    """Batched attention on tensors (..., L, d): returns (output, weights) in q's dtype.
    axis: the softmax's dim (-1 correct; 1 is what nn.Softmax() with no dim picks for a 4-D input,
    0 for a 3-D one: softmax-wrong-axis)."""
    import torch
    d_k = q.shape[-1]
    # transpose="T": batched-transpose, `k.T` reverses every axis
    scores = q @ (k.permute(*reversed(range(k.dim()))) if transpose == "T" else k.transpose(-2, -1))
    scores = {"sqrt": scores / math.sqrt(d_k), "none": scores, "dk": scores / d_k,
              "mul": scores * math.sqrt(d_k), "other": scores / math.sqrt(d_other or d_k)}[scale]
    if mask is None:
        weights = torch.softmax(scores, dim=axis)
    else:
        allowed = torch.as_tensor(mask).bool()
        if invert:
            allowed = ~allowed
        allowed = allowed.expand_as(scores)
        if mask_mode == "after":
            weights = torch.softmax(scores, dim=axis) * allowed
        elif fill == "-1e9":
            weights = torch.softmax(scores.masked_fill(~allowed, -1e9), dim=axis)
        else:
            weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=axis)
            if blocked_rows == "zero" and axis != -1:   # over another axis, NaN wherever all are blocked
                weights = torch.nan_to_num(weights, nan=0.0)
            elif blocked_rows == "zero":   # "nan": masked-row-nan
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
              invert=False, fill="-inf", mask_mode="before", first_head_only=False,
              mask_misbroadcast=False, k_in="key", v_in="value", blocked_rows="zero", d_other=None,
              extra=None, axis=-1):
    """Multi-head attention from a parameter dict `p` (float64 tensors), with switches.

    names: the four projection names (lesson 06 uses q_project, ...).
    k_from / v_from: "k"/"v" (correct) or "q" (kv-reuse-query-projection).
    k_in / v_in: "key"/"value" (correct) or "query" (kv-from-query-input).
    blocked_rows: "zero" (correct) or "nan" (masked-row-nan).
    mask_misbroadcast: a (B, 1, Lq, Lk) mask loses its head axis, so the (B, Lq, Lk) left
        broadcasts as (1, B, Lq, Lk): head i reads sequence i's mask (mask-misbroadcast; B == h only).
    heads_mixed: True (split and merge both reshape without the transpose), "merge" (the split is
        right, the merge reshapes (B, h, T, d_k) straight to (B, T, d_model)) or "split" (the split
        reshapes (B, T, d_model) straight to (B, h, T, d_k), the merge is right): heads-mixed.
    extra: a deviation the catalogue has no id for, seen in published code, so that the catalogued
        mistakes beside it are still named: "relu" (ReLU after every projection, the output one
        included), "residual_ln" (the module returns LayerNorm(output + query), LayerNorm's
        default affine parameters) or "causal" (a causal mask is always applied, as a `tril` buffer).
    """
    wq, wk, wv, wo = names
    pick = {"q": wq, "k": wk, "v": wv}
    import torch
    act = torch.relu if extra == "relu" else (lambda t: t)
    q = act(linear(query, p, wq))                              # (B, Lq, D)
    inputs = {"query": query, "key": key, "value": value}
    k = act(linear(inputs[k_in], p, pick[k_from]))              # (B, Lk, D)
    v = act(linear(inputs[v_in], p, pick[v_from]))              # (B, Lk, D)
    D = q.shape[-1]
    qh, kh, vh = (split(t, h, mixed=heads_mixed in (True, "split")) for t in (q, k, v))   # (B, h, L, d_k)
    m = None
    if extra == "causal":   # a causal mask always applied (a `tril` buffer), whatever mask is given
        m = torch.ones(query.shape[1], key.shape[1], dtype=torch.bool).tril()
        m = m if mask is None else m & torch.as_tensor(mask).bool()
    elif mask is not None:
        m = torch.as_tensor(mask).bool()
    if m is not None:
        if mask_misbroadcast:
            if m.dim() != 4 or m.shape[1] != 1 or m.shape[0] != h or h == 1:
                raise ValueError("mask-misbroadcast needs a (B, 1, Lq, Lk) mask with B == h > 1")
            m = m[:, 0]                                        # (B, Lq, Lk) -> seen as (1, B, Lq, Lk)
    heads, _ = torch_attention(qh, kh, vh, m, scale=scale, d_other=d_other or D, invert=invert,
                               fill=fill, mask_mode=mask_mode, axis=axis,
                               blocked_rows=blocked_rows)              # (B, h, Lq, d_k)
    if first_head_only:
        heads = heads.clone()
        heads[:, 1:] = 0
    concat = merge(heads, mixed=heads_mixed in (True, "merge"))   # (B, Lq, D)
    out = act(linear(concat, p, wo)) if out_proj else concat
    if extra == "residual_ln":
        out = torch.nn.functional.layer_norm(out + query, (D,))
    return out
