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
    """stable: True (subtract each slice's max), False (softmax-unstable) or "global"
    (softmax-global-max: one max for the whole array). axis=None normalises over every element."""
    x = np.asarray(x, dtype=np.result_type(x, np.float32))
    with np.errstate(all="ignore"):
        z = x - (x.max() if stable == "global" or axis is None else x.max(axis=axis, keepdims=True)) \
            if stable else x
        e = np.exp(z)
        return e / e.sum(axis=axis, keepdims=axis is not None)


def _scale(scores, d_k, how, d_other=None):
    return {
        "sqrt": lambda: scores / np.sqrt(d_k),
        "none": lambda: scores,
        "dk": lambda: scores / d_k,
        "mul": lambda: scores * np.sqrt(d_k),
        "other": lambda: scores / np.sqrt(d_other),   # sqrt of the wrong size (d_v, d_model)
    }[how]()


def np_attention(q, k, v, mask=None, *, scale="sqrt", d_other=None, axis=-1, stable=True,
                 mask_mode="before", fill="-inf", blocked_rows="zero", invert=False,
                 transpose="swap", int_invert=False):
    """Attention with switches. Returns (output, weights).

    mask_mode: "before" (correct) or "after" (weights * mask, not renormalised)
    fill: "-inf" (with blocked_rows="zero" correct; "nan" leaves NaN) or "-1e9" (leaks)
    transpose: "swap" (correct) or "T" (batched-transpose: `k.T` reverses every axis)
    int_invert: `~mask` on the mask as given (mask-int-invert: ~1 == -2 and ~0 == -1, both true)
    """
    with np.errstate(all="ignore"):
        kt = k.T if transpose == "T" else np.swapaxes(k, -1, -2)
        scores = _scale(q @ kt, q.shape[-1], scale, d_other)
        if mask is None:
            weights = np_softmax(scores, axis, stable=stable)
        else:
            allowed = np.asarray(mask).astype(bool)
            if int_invert:   # the student's blocked = ~mask, read as booleans
                allowed = ~(~np.asarray(mask)).astype(bool)
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


# --------------------------------------------------------------------------- lesson 09 (PyTorch)


def rope(x, positions, base=10000.0, *, layout="half", freq="2i", positions_used=True, direction=1):
    """Lesson 09's rotary position embedding in float64, with switches.

    layout: "half" (correct: pairs (i, i + d/2), GPT-NeoX / Hugging Face Llama) or "interleaved"
        (pairs (2i, 2i + 1), GPT-J): rope-interleaved.
    freq: "2i" (correct: theta_i = base^(-2i/d)); "i" (base^(-i/d)), "4i" (base^(-2i/(d/2)):
        arange(0, d, 2) divided by d/2), "inverse" (base^(+2i/d)): rope-wrong-frequency.
    positions_used: False rotates the rows by 0..T-1 whatever `positions` says: rope-positions-ignored.
    direction: -1 rotates the other way (the sin terms' signs swapped; no catalogue id).
    """
    import torch
    x = torch.as_tensor(x).double()
    d = x.shape[-1]
    half = d // 2
    i = torch.arange(half, dtype=torch.float64)
    expo = {"2i": 2 * i / d, "i": i / d, "4i": 2 * i / half, "inverse": -2 * i / d}[freq]
    pos = torch.as_tensor(positions).double() if positions_used else torch.arange(x.shape[-2], dtype=torch.float64)
    angles = pos[:, None] * base ** (-expo)[None, :]                    # (T, d/2)
    cos, sin = angles.cos(), direction * angles.sin()
    if layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        out = torch.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * cos - b * sin, b * cos + a * sin
        return out
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def sample_probs(logits, temperature=1.0, top_k=None, top_p=None, *, temperature_on="logits", top_p_rule="before",
                 renormalise=True, top_k_ties="keep", top_k_on="logits", top_p_order="index"):
    """Lesson 09's next_token_probs in float64, with switches.

    temperature_on: "logits" (correct) or "probs" (the probabilities divided by the temperature after
        the softmax): temperature-after-softmax.
    top_p_rule: "before" (correct: keep while the total before the token is < top_p) or "inclusive"
        (keep while the running total including the token is < top_p, so the crossing token is
        dropped): top-p-drops-threshold-token.
    renormalise: False leaves the kept probabilities as they are: not-renormalised.
    top_k_ties: "keep" (correct) or "drop" (exactly k tokens, by torch.topk's indices): top-k-ties-dropped.
    top_k_on: "logits" (correct) or "probs" (the tokens outside the top k zeroed after the softmax;
        the same answer unless renormalise is False).
    top_p_order: "index" (correct: equal probabilities, lower index first) or "reversed" (an ascending
        sort, as Hugging Face's warper does: equal probabilities, higher index first): top-p-tie-order.
    """
    import torch
    logits = torch.as_tensor(logits).double()
    V = logits.shape[-1]
    z = logits / temperature if temperature_on == "logits" else logits.clone()
    keep_k = None
    if top_k is not None:
        k = min(int(top_k), V)
        if top_k_ties == "keep":
            keep_k = z >= torch.topk(z, k, dim=-1).values[..., -1:]
        else:
            keep_k = torch.zeros_like(z, dtype=torch.bool).scatter(-1, torch.topk(z, k, dim=-1).indices, True)
        if top_k_on == "logits":
            z = z.masked_fill(~keep_k, float("-inf"))
    probs = torch.softmax(z, dim=-1)
    if temperature_on == "probs":
        probs = probs / temperature
    if top_k is not None and top_k_on == "probs":
        probs = probs.masked_fill(~keep_k, 0.0)
    if top_p is not None:
        if top_p_order == "index":
            sorted_p, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        else:
            flipped = probs.flip(-1)
            sorted_p, order = torch.sort(flipped, dim=-1, descending=True, stable=True)
            order = V - 1 - order
        total = torch.cumsum(sorted_p, dim=-1)
        keep_sorted = (total - sorted_p < top_p) if top_p_rule == "before" else (total < top_p)
        if top_p_rule == "before":
            keep_sorted[..., 0] = True
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = probs.masked_fill(~keep, 0.0)
    if renormalise:
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def decode_tokens(model_source, model_name, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                  seed=None, *, cache="yes", sampling=None, eval_mode=True):
    """Lesson 09's generate on a course model built from source (checks/generation_subjects.py), with
    switches. Returns the (B, T0 + max_new_tokens) token ids.

    cache: "yes" (correct: the prompt once, then each new token with the cache); "recompute" (the
        whole sequence at every step, no cache: the same tokens, so only the calls tell
        cache-not-used); "dropped" (each new token alone without the cache, so the model forgets the
        text before it): cache-not-used.
    sampling: sample_probs switches as ((name, value), ...) (the mistakes of next_token_probs, seen through generate).
    eval_mode: False runs the model in the training mode it was built in (generate-train-mode).
    seed: the torch.Generator's seed for the draws (None with temperature 0).
    """
    import torch
    scope = {}
    exec(compile(model_source, "<course model>", "exec"), {"torch": torch, "nn": torch.nn, "math": math,
                                                          "__name__": "course_model"}, scope)
    model = scope[model_name]
    model.train(not eval_mode)
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    prompt = torch.as_tensor(prompt).long()
    tokens = [prompt]
    with torch.no_grad():
        logits, state = model(prompt, cache=None)
        for step in range(max_new_tokens):
            last = logits[:, -1, :]
            if temperature == 0:
                token = last.argmax(dim=-1, keepdim=True)
            else:
                probs = sample_probs(last.double(), temperature, top_k, top_p, **dict(sampling or ()))
                token = torch.multinomial(probs.float(), 1, generator=generator)
            tokens.append(token)
            if step + 1 < max_new_tokens:
                if cache == "yes":
                    logits, state = model(token, cache=state)
                elif cache == "recompute":
                    logits, state = model(torch.cat(tokens, dim=1), cache=None)
                else:
                    logits, state = model(token, cache=None)
    return torch.cat(tokens, dim=1)
