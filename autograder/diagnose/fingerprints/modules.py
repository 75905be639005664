"""Fingerprints of lessons 03, 05 and 06: the reference attention module (SelfAttentionHead,
MultiHeadAttention, FixedMultiHeadAttention), passed in by the check, built with the given parameters
and run with one change: to its parameters (w_k := w_q, w_q scaled), its submodules (w_o := identity,
a projection followed by a reshape), the softmax its forward calls, its inputs or its output."""
from __future__ import annotations

from autograder.diagnose.fingerprints.attention import _Q_FACTOR
from autograder.diagnose.fingerprints.surgery import Proxy, built


def _softmax_variant(torch, allowed, seen, *, axis, mask_mode, fill, blocked_rows):
    """What the reference forward's `torch.softmax(scores, dim=-1)` becomes. `allowed`: the mask as it
    meets the scores, given here when the reference runs without it (mask_mode="after": the softmax's
    output multiplied by it; fill="-1e9": the blocked scores read as -1e9) or when fully blocked rows
    must stay -inf (the reference sets their scores to 0) for a softmax over another axis."""
    outside = mask_mode == "after" or fill == "-1e9"

    def softmax(s, dim=-1):
        if allowed is None:
            return torch.softmax(s, dim=axis)
        a = allowed.expand_as(s)
        if outside:
            w = torch.softmax(s.masked_fill(~a, -1e9) if fill == "-1e9" else s, dim=axis)
            return w * a if mask_mode == "after" else w
        w = seen["w"] = torch.softmax(s.masked_fill(~a.any(-1, keepdim=True), float("-inf")), dim=axis)
        # over another axis a student's softmax leaves NaN where a whole slice is blocked: zeroed
        return torch.nan_to_num(w, nan=0.0) if axis != -1 and blocked_rows == "zero" else w
    return softmax


def _blocked_nan(allowed, seen):
    """(B, h, Lq) the fully blocked query rows whose weights, left as the softmax gave them, hold NaN
    (the reference zeroes those rows; masked-row-nan does not)."""
    w = seen["w"]
    return ~allowed.expand_as(w).any(-1) & w.isnan().any(-1)


def _run(cls, init_args, p, call, allowed, *, h, names, k_from=None, v_from=None, scale="sqrt", d_other=None,
         transpose="swap", axis=-1, mask_mode="before", fill="-inf", blocked_rows="zero", heads_mixed=False,
         out_proj=True, relu=False):
    """`call(module, mask_given)` on the reference module `cls(*init_args)` holding the parameters `p`
    as the switches change them, its submodules and the torch.softmax its forward calls changed by the
    switches; mask_given is False when the mask is applied around the softmax instead (mask_mode, fill)."""
    import torch
    wq, wk, wv, *wo = names
    p = dict(p)
    for name, source in ((wk, k_from), (wv, v_from)):   # kv-reuse-query-projection: w_k := w_q
        if source is not None:
            p.update({f"{name}.{t}": p[f"{source}.{t}"] for t in ("weight", "bias")})
    if scale != "sqrt":   # the reference divides by sqrt(d_k) the scores of q scaled so
        c = _Q_FACTOR[scale](p[f"{wq}.weight"].shape[0] // h, d_other)
        p.update({f"{wq}.{t}": p[f"{wq}.{t}"] * c for t in ("weight", "bias")})
    outside = allowed is not None and (mask_mode == "after" or fill == "-1e9")
    seen = {}
    softmax = _softmax_variant(torch, allowed, seen, axis=axis, mask_mode=mask_mode, fill=fill,
                               blocked_rows=blocked_rows)
    nan_rows = allowed is not None and not outside and blocked_rows == "nan"
    with built(cls, init_args, p, torch=Proxy(torch, softmax=softmax)) as module:

        def wrap(name, fn):
            inner = getattr(module, name)
            setattr(module, name, lambda y: fn(inner(y)))

        if relu:                     # a ReLU after every projection (w_o included)
            for name in names:
                wrap(name, torch.relu)
        if transpose == "T":         # keys that the reference's transpose(-2, -1) turns into k.T
            wrap(wk, lambda k: k.permute(*reversed(range(k.dim()))).transpose(-2, -1))
        if heads_mixed in (True, "split"):   # the reference's split of these is y.reshape(B, h, T, d_k)
            for name in (wq, wk, wv):
                wrap(name, lambda y: y.reshape(y.shape[0], h, y.shape[1], -1).transpose(1, 2).reshape(y.shape))
        if wo and (not out_proj or heads_mixed in (True, "merge") or nan_rows):
            project = getattr(module, wo[0]) if out_proj else (lambda c: c)

            def to_output(c):   # c: the heads merged by the reference; undone, changed, merged again
                B, T, D = c.shape
                heads = c.view(B, T, h, D // h).transpose(1, 2)                      # (B, h, T, d_k)
                if nan_rows:
                    heads = heads.masked_fill(_blocked_nan(allowed, seen)[..., None], float("nan"))
                merged = heads.transpose(1, 2) if heads_mixed not in (True, "merge") else heads
                merged = merged.reshape(B, T, D)
                return project(merged)
            setattr(module, wo[0], to_output)
        with torch.no_grad():
            out = call(module, not outside)
    if nan_rows and not wo:      # a single head: its output rows
        out = out.masked_fill(_blocked_nan(allowed, seen)[..., None], float("nan"))
    return out


def _causal(mask, lq, lk, batch=None):
    """A `tril` buffer applied whatever mask is given (published code; no catalogue id)."""
    import torch
    m = torch.ones(lq, lk, dtype=torch.bool).tril()
    m = m if mask is None else m & torch.as_tensor(mask).bool()
    return m if batch is None else m.expand(batch, lq, lk)


def torch_head(head_cls, p, x, mask=None, *, extra=None, invert=False, **switches):
    """Lesson 03: the reference SelfAttentionHead(d_model, d_k) with the parameters `p` (float64) on x.
    k_from / v_from ("w_q"): the keys / values from w_q's parameters (kv-reuse-query-projection).
    scale, d_other: w_q scaled so that the reference's division leaves the mistaken scale.
    transpose="T": the keys reach the scores as `k.T` (batched-transpose).
    axis, mask_mode, fill, blocked_rows: the softmax the forward calls changed (_softmax_variant), or
        (blocked_rows="nan") the output NaN on the fully blocked rows.
    invert: the reference with ~mask. extra="causal": the reference with tril & mask."""
    import torch
    if extra == "causal":
        mask = _causal(mask, x.shape[1], x.shape[1])
    allowed = None if mask is None else torch.as_tensor(mask).bool()
    allowed = ~allowed if invert and allowed is not None else allowed
    d_k, d_model = p["w_q.weight"].shape
    return _run(head_cls, (d_model, d_k), p, lambda m, given: m(x, mask=allowed if given else None), allowed,
                h=1, names=("w_q", "w_k", "w_v"), **switches)


def _projections(names, k_from, v_from):
    """k_from / v_from "q": the keys / values computed with the query projection's parameters."""
    pick = dict(zip("qkv", names))
    return {"k_from": pick[k_from] if k_from else None, "v_from": pick[v_from] if v_from else None}


def torch_mha(mha_cls, p, query, key, value, mask=None, *, h, k_in="key", v_in="value", mask_misbroadcast=False,
              extra=None, invert=False, k_from=None, v_from=None, **switches):
    """Lesson 05: the reference MultiHeadAttention(d_model, h) with the parameters `p` (float64).
    k_from / v_from "q": w_k / w_v := w_q (kv-reuse-query-projection).
    k_in / v_in "query": the reference called with the query as its key / value input (kv-from-query-input).
    heads_mixed: True / "split": each projection's output given to the reference's split_heads as
        y.reshape(B, h, T, d_k) would split it; True / "merge": w_o reads the merged heads reshaped
        from (B, h, T, d_k) without the transpose (heads-mixed).
    out_proj=False: w_o := identity (missing-output-projection).
    mask_misbroadcast: the reference with the (B, 1, Lq, Lk) mask's sequences as its heads (B == h).
    extra: "relu" (a ReLU after every projection), "residual_ln" (LayerNorm(output + query) of the
        reference output), "causal" (tril & mask): published code, no catalogue id.
    The other switches as in torch_head."""
    import torch
    inputs = {"query": query, "key": key, "value": value}
    m = None if mask is None else torch.as_tensor(mask).bool()
    if extra == "causal":
        m = _causal(m, query.shape[1], key.shape[1])
    if m is not None and mask_misbroadcast:
        if m.dim() != 4 or m.shape[1] != 1 or m.shape[0] != h or h == 1:
            raise ValueError("mask-misbroadcast needs a (B, 1, Lq, Lk) mask with B == h > 1")
        m = m[:, 0][None]                      # (1, B, Lq, Lk): head i reads sequence i's mask
    m = ~m if invert and m is not None else m
    d_model = query.shape[-1]
    names = ("w_q", "w_k", "w_v", "w_o")
    out = _run(mha_cls, (d_model, h), p,
               lambda module, given: module(query, inputs[k_in], inputs[v_in], mask=m if given else None), m,
               h=h, names=names, relu=extra == "relu", **_projections(names, k_from, v_from),
               **{"d_other": d_model, **switches})
    return torch.nn.functional.layer_norm(out + query, (d_model,)) if extra == "residual_ln" else out


def torch_fixed(fixed_cls, p, x, mask=None, *, h, extra=None, invert=False, k_from=None, v_from=None, **switches):
    """Lesson 06: the reference FixedMultiHeadAttention(d_model, h, 0.0) with the parameters `p`
    (float64) on x, the (B, T, T) mask as its attn_mask; the switches as in torch_mha."""
    import torch
    B, T, d_model = x.shape
    m = None if mask is None else torch.as_tensor(mask).bool()
    if extra == "causal":
        m = _causal(m, T, T, batch=B)
    m = ~m if invert and m is not None else m
    names = ("q_project", "k_project", "v_project", "o_project")
    out = _run(fixed_cls, (d_model, h, 0.0), p, lambda module, given: module(x, attn_mask=m if given else None),
               None if m is None else m[:, None], h=h, names=names, relu=extra == "relu",
               **_projections(names, k_from, v_from), **{"d_other": d_model, **switches})
    return torch.nn.functional.layer_norm(out + x, (d_model,)) if extra == "residual_ln" else out


def split_heads(split, x, h, *, mixed=False):
    """Lesson 05: the reference split_heads(x, h); mixed: on x's values read head-major, so that the
    result is x.reshape(B, h, T, d_k), the split without the transpose (heads-mixed)."""
    B, T, D = x.shape
    return split(x.reshape(B, h, T, D // h).transpose(1, 2).reshape(B, T, D) if mixed else x, h)


def merge_heads(merge, x, *, mixed=False):
    """Lesson 05: the reference merge_heads(x); mixed: on x's values read as (B, T, h, d_k), so that the
    result is x.reshape(B, T, h * d_k), the merge without the transpose (heads-mixed)."""
    B, h, T, d = x.shape
    return merge(x.reshape(B, T, h, d).transpose(1, 2) if mixed else x)
