"""Fingerprints of lessons 07-08: positional encoding, the pre-norm block, repeat_kv, the KV cache."""
from __future__ import annotations

import math

import numpy as np

from autograder.diagnose.fingerprints.modules import linear, merge, split  # noqa: F401


# --------------------------------------------------------------------------- lessons 07-08 (PyTorch)


def positional(seq_len, d_model, *, swap=False, freq="2i", layout="interleaved"):
    """The sinusoidal encoding (float64, (seq_len, d_model)) with switches.

    swap: cosine on the even features and sine on the odd ones (pe-sin-cos-swapped).
    freq: "2i" (correct: feature pair i uses 10000^(2i/d_model)); "i" (exponent i/d_model),
        "feature" (exponent j/d_model with j the feature index, so odd features get their own
        frequency), "inverse" (p * 10000^(2i/d_model)), "2feature" (exponent 2j/d_model with j the
        feature index: 4i/d_model and (4i + 2)/d_model): all pe-wrong-frequency.
    layout: "interleaved" (correct: sin on 2i, cos on 2i + 1) or "concat" (the d/2 sines first, then
        the d/2 cosines: pe-concatenated).
    """
    import torch
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]           # (T, 1)
    i = torch.arange(d_model // 2, dtype=torch.float64)[None, :]        # (1, d/2): pair index
    expo = {"2i": 2 * i, "i": i, "feature": 2 * i, "inverse": -2 * i, "2feature": 4 * i}[freq] / d_model
    even = pos / 10000 ** expo                                          # (T, d/2)
    odd = {"feature": lambda: pos / 10000 ** ((2 * i + 1) / d_model),
           "2feature": lambda: pos / 10000 ** ((4 * i + 2) / d_model)}.get(freq, lambda: even)()
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    pe = torch.zeros(seq_len, d_model, dtype=torch.float64)
    if layout == "concat":
        pe[:, :d_model // 2], pe[:, d_model // 2:] = first(even), second(odd)
    else:
        pe[:, 0::2], pe[:, 1::2] = first(even), second(odd)
    return pe


def _attend(q, k, v, allowed=None, *, scale="sqrt", d_other=None, blocked="nan"):
    """softmax(q k^T / sqrt(d_k)) v with a bool mask (True = attend). Fully blocked rows give NaN
    (blocked="nan"), as nn.MultiheadAttention does under no_grad, or zero weights (blocked="zero"),
    as its scaled_dot_product_attention path does otherwise."""
    import torch
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)                                    # (B, h, Lq, Lk)
    scores = {"sqrt": scores / math.sqrt(d_k), "none": scores, "dk": scores / d_k,
              "mul": scores * math.sqrt(d_k), "other": scores / math.sqrt(d_other or d_k)}[scale]
    if allowed is None:
        return torch.softmax(scores, dim=-1) @ v
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    if blocked == "zero":
        weights = torch.nan_to_num(weights, nan=0.0)
    return weights @ v


def torch_block(p, x, mask=None, *, h, residual="both", norm="pre", invert=False, mask_misbroadcast=False,
                blocked="nan"):
    """Lesson 07's pre-norm TransformerBlock from a parameter dict (float64), with switches.

    residual: "both" (correct), "attn" (only the attention branch is added, the feed-forward output
        replaces x), "ff" (the reverse), "none": missing-residual.
    norm: "pre" (correct) or "post" (x = norm1(x + attn(x)); x = norm2(x + ff(x))): post-norm.
    invert: the course mask passed to torch unconverted, so True blocks (mask-inverted).
    mask_misbroadcast: the (B, T, T) mask folded for torch's (B * h, T, T) attn_mask with
        `.repeat(h, 1, 1)` instead of `.repeat_interleave(h, dim=0)` (differs only when B > 1).
    blocked: what a fully blocked query row gives ("nan" or "zero" weights; see _attend).
    """
    import torch
    import torch.nn.functional as F
    B, T, D = x.shape
    allowed = None
    if mask is not None:
        allowed = torch.as_tensor(mask).bool().expand(B, T, T)
        if invert:
            allowed = ~allowed
        if mask_misbroadcast:
            if B == 1:
                raise ValueError("mask-misbroadcast changes nothing with one sequence")
            allowed = allowed.repeat(h, 1, 1).view(B, h, T, T)          # folded row b*h + i reads mask (b*h + i) % B
        else:
            allowed = allowed[:, None]                                  # (B, 1, T, T)

    def attn(y):
        w_q, w_k, w_v = p["attn.in_proj_weight"].chunk(3)
        b_q, b_k, b_v = p["attn.in_proj_bias"].chunk(3)
        q, k, v = (split(y @ w.T + b, h) for w, b in ((w_q, b_q), (w_k, b_k), (w_v, b_v)))   # (B, h, T, d_k)
        return linear(merge(_attend(q, k, v, allowed, blocked=blocked)), p, "attn.out_proj")   # (B, T, D)

    def ff(y):
        return linear(torch.relu(linear(y, p, "ff.0")), p, "ff.2")

    def ln(y, name):
        return F.layer_norm(y, (D,), p[f"{name}.weight"], p[f"{name}.bias"])

    if norm == "post":
        x = ln(x + attn(x), "norm1")
        return ln(x + ff(x), "norm2")
    a = attn(ln(x, "norm1"))
    x = x + a if residual in ("both", "attn") else a
    f = ff(ln(x, "norm2"))
    return x + f if residual in ("both", "ff") else f


def repeat_heads(x, n_rep, *, order="interleave", axis=1):
    """(B, h_kv, T, d) -> (B, h_kv * n_rep, T, d); order "tile" is kv-repeat-order (x.repeat);
    axis other than 1: each row repeated along the batch (0), time (2) or feature (3) axis instead of
    the head axis (kv-repeat-wrong-axis)."""
    if axis != 1:
        return x.repeat_interleave(n_rep, dim=axis)
    return x.repeat_interleave(n_rep, dim=1) if order == "interleave" else x.repeat(1, n_rep, 1, 1)


def causal_step(p, x, cache=None, *, h, h_kv, order="interleave", offset="past", append="yes",
                scale="sqrt", heads_mixed=False, causal="tril", cache_order="old-new", store="kv", d_other=None):
    """One call of lesson 08's CausalSelfAttention from a parameter dict: (output, returned cache).

    offset: "past" (correct: new query i sees keys j <= T_past + i); "ignore" (the (T, T_past + T)
        mask is tril without the offset, as `is_causal=True` with a cache does); "none" (no mask at
        all once a cache is given); "whisper" (one new token reads every key, which is right, but
        several new tokens get the top-left corner of the causal mask, tril without the offset, as
        Whisper's `mask[:n_ctx, :n_ctx]` does): all cache-causal-offset.
    append: "yes" (correct: the cache returned holds past + new keys/values); "old" (the cache
        given is returned, or the new keys when there was none); "new" (only the new keys/values);
        "none" (None): cache-not-appended.
    causal: "tril" (correct), "diag" (the diagonal blocked), "next" (one future key let through),
        "upper" (upper-triangular): causal-off-by-one / causal-transposed; "none" (no causal mask at
        all): causal-mask-missing.
    cache_order: "old-new" (correct) or "new-old" (the new keys concatenated before the cached ones,
        used so and returned so): cache-order-reversed.
    store: "kv" (correct: the cache holds the num_kv_heads keys/values) or "repeated" (the keys and
        values are repeated to num_heads first, and the cache holds those; the outputs are right):
        cache-stores-repeated.
    """
    import torch
    B, T, D = x.shape
    d_k = D // h
    q = split(linear(x, p, "w_q"), h, mixed=heads_mixed)               # (B, h, T, d_k)
    k = split(linear(x, p, "w_k"), h_kv, mixed=heads_mixed)            # (B, h_kv, T, d_k)
    v = split(linear(x, p, "w_v"), h_kv, mixed=heads_mixed)
    n_rep = h // h_kv
    if store == "repeated":
        k, v = repeat_heads(k, n_rep, order=order), repeat_heads(v, n_rep, order=order)
        order, n_rep = "interleave", 1
    new = (k, v)
    if cache is not None:
        pair = (lambda old, n: [n, old]) if cache_order == "new-old" else (lambda old, n: [old, n])
        k, v = torch.cat(pair(cache[0], k), dim=2), torch.cat(pair(cache[1], v), dim=2)   # (B, h_kv, T_all, d_k)
    T_all = k.shape[2]
    past = {"past": T_all - T, "ignore": 0, "none": T_all if cache is not None else 0,
            "whisper": T_all - T if T == 1 else 0}[offset]
    ones = torch.ones(T, T_all, dtype=torch.bool)
    allowed = {"tril": ones.tril(past), "diag": ones.tril(past - 1), "next": ones.tril(past + 1),
               "upper": ones.triu(past), "none": ones}[causal]
    out = _attend(q, repeat_heads(k, n_rep, order=order), repeat_heads(v, n_rep, order=order), allowed,
                  scale=scale, d_other=d_other or D)                    # (B, h, T, d_k)
    out = linear(merge(out, mixed=heads_mixed), p, "w_o")               # (B, T, D)
    returned = {"yes": (k, v), "old": cache if cache is not None else new, "new": new, "none": None}[append]
    return out, returned


def causal_chunks(p, x, chunks, cache=None, **switches):
    """Run causal_step over x (B, T, D) in chunks of the given sizes, threading the cache each
    call returns (as the student's module would). Returns (outputs concatenated, last cache)."""
    import torch
    outs, start = [], 0
    for n in chunks:
        out, cache = causal_step(p, x[:, start:start + n], cache, **switches)
        outs.append(out)
        start += n
    return torch.cat(outs, dim=1), cache
