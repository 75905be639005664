"""Fingerprints of lessons 07-08: the reference positional_encoding, TransformerBlock, repeat_kv and
CausalSelfAttention, passed in by the check, run with one change."""
from __future__ import annotations

from autograder.diagnose.fingerprints.attention import _Q_FACTOR
from autograder.diagnose.fingerprints.surgery import Proxy, built, with_globals

# --------------------------------------------------------------------------- lesson 07

# freq: the pair exponents' numerators (the reference's arange(0, d_model, 2), "2i") for the even
# (sine) features and for the odd (cosine) ones
_FREQ = {"2i": ((0, 2), (0, 2)), "i": ((0, 1), (0, 1)), "inverse": ((0, -2), (0, -2)),
         "feature": ((0, 2), (1, 2)), "2feature": ((0, 4), (2, 4))}


def positional(encoding, seq_len, d_model, *, swap=False, freq="2i", layout="interleaved"):
    """The reference positional_encoding(seq_len, d_model) (`encoding`) with switches.

    swap: its torch.sin and torch.cos exchanged (pe-sin-cos-swapped).
    freq: its pair exponents 2i (from `torch.arange(0, d_model, 2)`) read as i ("i"), -2i ("inverse":
        p multiplied by 10000^(2i/d_model)), or, for the odd features, from a second run whose exponents
        are 2i + 1 ("feature": j / d_model for feature j) or 4i, 4i + 2 ("2feature"): pe-wrong-frequency.
    layout="concat": its columns permuted, the sines first, then the cosines (pe-concatenated).
    """
    import torch

    def run(start, step):
        def arange(*args, **kwargs):
            if len(args) == 3 and args[2] == 2:        # the pair exponents' numerators 0, 2, 4, ...
                return torch.arange(start, start + step * (args[1] // 2), step, **kwargs)[: args[1] // 2]
            return torch.arange(*args, **kwargs)
        sin, cos = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
        return with_globals(encoding, torch=Proxy(torch, arange=arange, sin=sin, cos=cos))(seq_len, d_model)

    even, odd = _FREQ[freq]
    pe = run(*even)
    if odd != even:
        pe[:, 1::2] = run(*odd)[:, 1::2]
    if layout == "concat":
        pe = torch.cat([pe[:, 0::2], pe[:, 1::2]], dim=1)
    return pe


def torch_block(block_cls, p, x, mask=None, *, h, residual="both", norm="pre", invert=False,
                mask_misbroadcast=False, blocked="nan"):
    """The reference TransformerBlock(d_model, h, d_ff, 0.0) (`block_cls`) with the parameters `p`
    (float64) on x, with switches.

    invert: the reference with ~mask (the course's mask reaching attn_mask unconverted: mask-inverted).
    mask_misbroadcast: the (B * h, T, T) attn_mask the reference gives nn.MultiheadAttention with its
        rows in tile order (row b * h + i reads sequence (b * h + i) % B's mask), as `.repeat(h, 1, 1)`
        makes it; differs only when B > 1.
    blocked: "zero": a fully blocked query row gets zero weights, as nn.MultiheadAttention's general
        path (taken here: gradients on) gives them; "nan": that answer NaN on the tokens one of whose heads
        reads no key, as a softmax over -inf alone gives it (and the fast path, under torch.no_grad() with
        an even number of heads).
    residual ("attn", "ff", "none": missing-residual) and norm="post" (post-norm): the reference's own
        sublayers (attn, with the attn_mask its forward builds, ff, norm1, norm2) composed in the
        mistaken order, the sums of the residual connections written out here.
    """
    import torch
    B, T, D = x.shape
    mask = None if mask is None else (~torch.as_tensor(mask).bool() if invert else mask)
    if mask_misbroadcast and mask is not None and B == 1:
        raise ValueError("mask-misbroadcast changes nothing with one sequence")
    seen = {}

    def attn_mask(_, args, kwargs):
        if "attn_mask" in seen:          # the sublayer composed again below: the mask as first changed
            return None
        m = kwargs.get("attn_mask")
        if m is not None and mask_misbroadcast:   # row r reads the reference's row (r % B) * h
            m = m[(torch.arange(B * h) % B) * h]
        seen["attn_mask"] = kwargs["attn_mask"] = m
        return args, kwargs
    with built(block_cls, (D, h, p["ff.0.weight"].shape[0], 0.0), p) as module, torch.enable_grad():
        hook = module.attn.register_forward_pre_hook(attn_mask, with_kwargs=True)
        try:
            out = module(x, mask)
            if residual != "both" or norm != "pre":
                def attn(y):
                    return module.attn(y, y, y, attn_mask=seen["attn_mask"], need_weights=False)[0]
                if norm == "post":
                    x = module.norm1(x + attn(x))
                    out = module.norm2(x + module.ff(x))
                else:
                    a = attn(module.norm1(x))
                    x = x + a if residual == "attn" else a
                    f = module.ff(module.norm2(x))
                    out = x + f if residual == "ff" else f
        finally:
            hook.remove()
    out = out.detach()
    if blocked == "nan" and seen["attn_mask"] is not None:   # tokens one of whose heads reads no key
        out = out.masked_fill(seen["attn_mask"].view(B, h, T, -1).all(-1).any(1)[..., None], float("nan"))
    return out


# --------------------------------------------------------------------------- lesson 08


def repeat_heads(repeat_kv, x, n_rep, *, order="interleave", axis=1):
    """The reference repeat_kv(x, n_rep) (`repeat_kv`); order="tile": its heads permuted so that head j
    holds key/value head j % h_kv (kv-repeat-order, x.repeat); axis other than 1: applied with that axis
    in the head axis's place, so the batch (0), time (2) or feature (3) axis is repeated (kv-repeat-wrong-axis)."""
    import torch
    if axis != 1:
        return repeat_kv(x.transpose(1, axis), n_rep).transpose(1, axis)
    out = repeat_kv(x, n_rep)
    if order == "tile":
        h_kv = x.shape[1]
        j = torch.arange(h_kv * n_rep)
        out = out[:, (j % h_kv) * n_rep + j // h_kv]
    return out


_CAUSAL = {"tril": lambda t, k: t.tril(k), "diag": lambda t, k: t.tril(k - 1), "next": lambda t, k: t.tril(k + 1),
           "upper": lambda t, k: t.triu(k), "none": lambda t, k: t}


class _Ones:
    """What the reference's `torch.ones(T, T_past + T)` becomes: its `.tril(T_past)` is the mistaken mask."""

    def __init__(self, ones, tril):
        self._ones, self._tril = ones, tril

    def tril(self, past):
        return self._tril(self._ones, past)


def causal_step(attn_cls, p, x, cache=None, *, h, h_kv, order="interleave", offset="past", append="yes",
                scale="sqrt", heads_mixed=False, causal="tril", cache_order="old-new", store="kv", d_other=None):
    """One call of the reference CausalSelfAttention(d_model, h, h_kv) (`attn_cls`) with the parameters `p`
    (float64): (output, returned cache), with switches.

    order="tile": its repeat_kv replaced by repeat_heads(..., order="tile") (kv-repeat-order).
    scale, d_other: w_q scaled so that the reference's division leaves the mistaken scale.
    heads_mixed: its projections' outputs arranged so that its view + transpose splits them as a view
        alone would, and w_o reading the merged heads as a reshape without the transpose would merge them.
    causal ("diag", "next", "upper", "none": causal-off-by-one, causal-transposed, causal-mask-missing) and
        offset ("ignore": tril without the T_past offset, "none": no mask once a cache is given, "whisper":
        no offset for several new tokens): its `torch.ones(T, T_all).tril(T_past)` changed.
    cache_order="new-old": its torch.cat given [new, cached] (cache-order-reversed).
    append ("old", "new", "none": cache-not-appended): the cache it returns replaced by the one given
        (or the new keys without one), the new keys and values alone, or None.
    store="repeated": the reference with h key/value heads whose projections are the h_kv ones repeated
        (cache-stores-repeated: the outputs are right, the cache holds h heads); checks offer it alone.
    """
    import torch
    B, T, D = x.shape
    p = dict(p)
    if store == "repeated":            # w_k, w_v rows of kv head j // n_rep (or j % h_kv) for head j
        d_k, n_rep = D // h, h // h_kv
        j = torch.arange(h)
        heads = (j % h_kv) if order == "tile" else j // n_rep
        rows = (heads[:, None] * d_k + torch.arange(d_k)).reshape(-1)
        p.update({f"{n}.{t}": p[f"{n}.{t}"][rows] for n in ("w_k", "w_v") for t in ("weight", "bias")})
        h_kv, order = h, "interleave"
    if scale != "sqrt":
        c = _Q_FACTOR[scale](D // h, d_other or D)
        p.update({f"w_q.{t}": p[f"w_q.{t}"] * c for t in ("weight", "bias")})
    new = {}

    def cat(tensors, dim):
        new.setdefault("k" if "k" not in new else "v", tensors[1])
        return torch.cat(tensors[::-1] if cache_order == "new-old" else tensors, dim=dim)

    def ones(t, t_all, **kwargs):
        past = {"past": t_all - t, "ignore": 0, "none": t_all if cache is not None else 0,
                "whisper": t_all - t if t == 1 else 0}[offset]
        return _Ones(torch.ones(t, t_all, **kwargs), lambda m, _: _CAUSAL[causal](m, past))

    repeat_kv = attn_cls.forward.__globals__["repeat_kv"]
    names = {"torch": Proxy(torch, cat=cat, ones=ones)}
    if order == "tile":
        names["repeat_kv"] = lambda t, n_rep: repeat_heads(repeat_kv, t, n_rep, order="tile")
    with built(attn_cls, (D, h, h_kv), p, **names) as module, torch.no_grad():
        if heads_mixed:
            for name, n_heads in (("w_q", h), ("w_k", h_kv), ("w_v", h_kv)):
                inner = getattr(module, name)
                setattr(module, name, lambda y, inner=inner, n=n_heads: inner(y).reshape(
                    B, n, T, -1).transpose(1, 2).reshape(B, T, -1))
            w_o = module.w_o
            module.w_o = lambda c: w_o(c.view(B, T, h, -1).transpose(1, 2).reshape(B, T, D))
        out, returned = module(x, cache)
    fresh = (new["k"], new["v"]) if new else returned
    returned = {"yes": returned, "old": cache if cache is not None else fresh, "new": fresh, "none": None}[append]
    return out, returned


def causal_chunks(attn_cls, p, x, chunks, cache=None, **switches):
    """causal_step over x (B, T, D) in chunks of the given sizes, threading the cache each call returns
    (as the student's module would). Returns (outputs concatenated, last cache)."""
    import torch
    outs, start = [], 0
    for n in chunks:
        out, cache = causal_step(attn_cls, p, x[:, start:start + n], cache, **switches)
        outs.append(out)
        start += n
    return torch.cat(outs, dim=1), cache
