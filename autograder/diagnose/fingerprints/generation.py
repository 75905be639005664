"""Fingerprints of lesson 09: the reference apply_rope, next_token_probs and generate, passed in by the
check, run with one change."""
from __future__ import annotations

import contextlib
import functools
import math

from autograder.diagnose.fingerprints.surgery import Proxy, with_globals

# freq: the base that makes the reference's base ** (-2i / d) the mistaken frequency
_ROPE_BASE = {"2i": lambda b: b, "i": math.sqrt, "4i": lambda b: b * b, "inverse": lambda b: 1 / b}


def rope(apply_rope, x, positions, base=10000.0, *, layout="half", freq="2i", positions_used=True, direction=1):
    """The reference apply_rope (`apply_rope`) in float64, with switches.

    layout="interleaved": the reference applied to the features reordered so that its pairs (i, i + d/2)
        are the pairs (2i, 2i + 1), and put back (the GPT-J layout: rope-interleaved).
    freq: the reference with the base sqrt(base) ("i": base^(-i/d)), base ** 2 ("4i": base^(-2i/(d/2)))
        or 1 / base ("inverse": base^(+2i/d)): rope-wrong-frequency.
    positions_used=False: the reference given 0..T-1 whatever `positions` says (rope-positions-ignored).
    direction=-1: the reference given the positions negated, so the rotation goes the other way (rope-sign-flipped).
    """
    import torch
    x = torch.as_tensor(x).double()
    pos = torch.as_tensor(positions) if positions_used else torch.arange(x.shape[-2])
    pos = pos if direction == 1 else -pos
    if layout == "interleaved":
        half = x.shape[-1] // 2
        out = apply_rope(torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1), pos, _ROPE_BASE[freq](base))
        return torch.stack([out[..., :half], out[..., half:]], dim=-1).flatten(-2)
    return apply_rope(x, pos, _ROPE_BASE[freq](base))


def sample_probs(next_token_probs, logits, temperature=1.0, top_k=None, top_p=None, *, temperature_on="logits",
                 top_p_rule="before", renormalise=True, top_k_ties="keep", top_k_on="logits", top_p_order="index",
                 top_k_bound="kth", top_p_on="scaled", top_p_empty="nan"):
    """The reference next_token_probs (`next_token_probs`) in float64, with switches.

    temperature_on="probs": the reference with temperature 1, its torch.softmax's output divided by the
        temperature (temperature-after-softmax).
    top_k_on="probs": the reference without top_k, its softmax's output zeroed outside the top k (the same
        answer unless renormalise is False).
    top_k_ties="drop": the top k are torch.topk's k indices (top-k-ties-dropped): the reference without
        top_k, on logits that are -inf outside those indices (or, with top_k_on="probs", its softmax's
        output zeroed there); top_k_ties="sort": the first k of torch.sort's descending order (an unstable
        sort: Gemma's sampler), or "argsort": the last k of an ascending torch.argsort (ChatRWKV), also
        top-k-ties-dropped.
    top_p_order="reversed": the reference's torch.sort breaking ties higher index first (top-p-tie-order).
    top_k_bound="next": the threshold is the (k + 1)-th largest logit (one token too many is kept);
        "above": only logits above the k-th largest are kept (the k-th and its ties removed). Neither is
        catalogued: the feedback says what the code does.
    top_p_rule="inclusive": the reference's torch.cumsum counting each token's own probability, so a token
        is kept while the total including it is below top_p; where the most probable token alone reaches
        top_p nothing is kept (the reference always keeps that one, so those rows are set to 0 here, NaN
        once renormalised): top-p-drops-threshold-token. With top_p_empty="first" those rows keep their
        most probable token, as the reference does (code that drops the crossing token but never keeps
        nothing).
    renormalise=False: the reference's answer, its kept tokens holding the softmax's probabilities as they
        were before the division by their sum (not-renormalised).
    top_p_on="raw": the top-p set is the one the reference keeps at temperature 1 (the softmax of the raw
        logits), the probabilities those of the reference at the temperature without top_p, kept on that
        set (top-p-before-temperature; top-k keeps the same tokens at any temperature).
    """
    import torch
    if top_p_on == "raw" and top_p is not None:
        switches = dict(top_p_rule=top_p_rule, top_p_empty=top_p_empty, top_k_ties=top_k_ties, top_k_on=top_k_on, top_p_order=top_p_order,
                        top_k_bound=top_k_bound)
        kept = sample_probs(next_token_probs, logits, 1.0, top_k, top_p, **switches) > 0
        probs = sample_probs(next_token_probs, logits, temperature, top_k, None, temperature_on=temperature_on,
                             renormalise=renormalise, **switches).masked_fill(~kept, 0.0)
        return probs / probs.sum(-1, keepdim=True) if renormalise else probs
    logits = torch.as_tensor(logits).double()
    keep_k = None
    if top_k is not None and (top_k_ties != "keep" or top_k_on == "probs" or top_k_bound != "kth"):
        k = min(int(top_k) + (top_k_bound == "next"), logits.shape[-1])
        scaled = logits / temperature if temperature_on == "logits" else logits
        if top_k_ties in ("drop", "sort", "argsort"):   # torch.topk's k indices, the first k of torch.sort's
            first = (torch.topk(scaled, k, dim=-1).indices if top_k_ties == "drop" else   # order, the last k
                     torch.sort(scaled, dim=-1, descending=True).indices[..., :k] if top_k_ties == "sort" else
                     torch.argsort(scaled, dim=-1)[..., scaled.shape[-1] - k:])     # of torch.argsort's
            keep_k = torch.zeros_like(scaled, dtype=torch.bool).scatter(-1, first, True)
        elif top_k_bound == "above":
            keep_k = scaled > torch.topk(scaled, k, dim=-1).values[..., -1:]
        else:
            keep_k = scaled >= torch.topk(scaled, k, dim=-1).values[..., -1:]
        if top_k_on == "logits":
            logits = logits.masked_fill(~keep_k, float("-inf"))
        top_k = None
    seen = {}

    def softmax(z, dim=-1):
        probs = torch.softmax(z, dim=dim)
        probs = probs / temperature if temperature_on == "probs" else probs
        probs = probs.masked_fill(~keep_k, 0.0) if keep_k is not None and top_k_on == "probs" else probs
        seen["probs"] = probs
        return probs

    def sort(p, dim=-1, descending=False, stable=False):
        if top_p_order == "index":
            return torch.sort(p, dim=dim, descending=descending, stable=stable)
        values, order = torch.sort(p.flip(-1), dim=dim, descending=descending, stable=stable)
        return values, p.shape[-1] - 1 - order

    def cumsum(p, dim=-1):
        return torch.cumsum(p, dim=dim) + (p if top_p_rule == "inclusive" else 0)

    reference = with_globals(next_token_probs, torch=Proxy(torch, softmax=softmax, sort=sort, cumsum=cumsum))
    out = reference(logits, 1.0 if temperature_on == "probs" else temperature, top_k, top_p)
    if not renormalise:
        out = seen["probs"].masked_fill(~(out > 0), 0.0)
    if top_p is not None and top_p_rule == "inclusive" and top_p_empty == "nan":
        nothing = seen["probs"].max(-1, keepdim=True).values >= top_p
        out = out.masked_fill(nothing, 0.0 if not renormalise else float("nan"))
    return out


@functools.lru_cache(maxsize=16)
def _compiled(model_source):
    """The course model's code, compiled once per source (the grader writes a handful of them;
    compiling anew for every expected run was ~12 ms of a student's grading)."""
    return compile(model_source, "<course model>", "exec")


def _course_model(model_source, model_name):
    import torch
    scope = {}
    exec(_compiled(model_source), {"torch": torch, "nn": torch.nn, "math": math, "__name__": "course_model"}, scope)
    return scope[model_name]


class _Model:
    """The course model as the reference generate is given it: the calls it makes passed on as a
    mistaken generate would make them (cache), its eval() ignored (eval_mode=False), and the logits
    each new token is chosen from kept."""

    def __init__(self, model, cache, eval_mode, position="last"):
        self.model, self.cache, self.eval_mode, self.position = model, cache, eval_mode, position
        self.seen, self.first, self.chosen_from = None, None, []

    @property
    def training(self):
        return self.model.training

    def eval(self):
        if self.eval_mode:
            self.model.eval()
        return self

    def train(self, mode=True):
        self.model.train(mode)
        return self

    def __call__(self, idx, cache=None):
        import torch
        self.seen = idx if self.seen is None else torch.cat([self.seen, idx], dim=1)   # every token so far
        if cache is not None and self.cache != "yes":
            idx, cache = {"recompute": (self.seen, None), "whole": (self.seen, cache), "dropped": (idx, None),
                          "stale": (idx, self.first)}[self.cache]
        logits, state = self.model(idx, cache=cache)
        self.first = state if self.first is None else self.first
        if self.position == "first":     # the reference reads the last position: give it the first
            logits = logits[:, :1]
        self.chosen_from.append(logits[:, -1, :].detach())
        return logits, state


def _decode(generate, model_source, model_name, prompt, max_new_tokens, temperature, top_k, top_p, seed, cache,
            sampling, eval_mode, grad, position="last"):
    """(tokens (B, T0 + max_new_tokens), the last logits each new token was chosen from (max_new_tokens, B, V))."""
    import torch
    model = _course_model(model_source, model_name)
    if not eval_mode:
        model.train(True)
    names = {}
    if grad:      # the reference's torch.no_grad() does nothing
        names["torch"] = Proxy(torch, no_grad=contextlib.nullcontext)
    if sampling:  # its next_token_probs with the mistakes of sample_probs
        reference_probs = generate.__globals__["next_token_probs"]
        names["next_token_probs"] = lambda logits, *knobs: sample_probs(reference_probs, logits, *knobs,
                                                                        **dict(sampling)).float()
    if names:
        generate = with_globals(generate, **names)
    seen = _Model(model, cache, eval_mode, position)
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    tokens = generate(seen, torch.as_tensor(prompt).long(), max_new_tokens, temperature, top_k, top_p,
                      generator=generator)
    return tokens, torch.stack(seen.chosen_from)


def decode_tokens(generate, model_source, model_name, prompt, max_new_tokens, temperature=1.0, top_k=None,
                  top_p=None, seed=None, *, cache="yes", sampling=None, eval_mode=True, grad=False, position="last"):
    """The reference generate (`generate`) on a course model built from source (checks/generation_subjects.py),
    with switches. Returns the (B, T0 + max_new_tokens) token ids.

    cache: "yes" (the reference's calls as they are); the model given to the reference calls the course
        model with the whole sequence and no cache ("recompute"), the whole sequence with the cache
        ("whole": prompt-fed-again), each new token without the cache ("dropped": cache-dropped); or each
        new token with the prompt's cache ("stale": no catalogue id). On a model without `cache_term`,
        "recompute" gives the right tokens.
    position="first": the reference is given the first position's logits where it reads the last
        (first-position-logits; after the prompt each call has one position, so only the first
        new token changes).
    sampling: sample_probs switches as ((name, value), ...): the reference's next_token_probs replaced by
        sample_probs with them (the mistakes of next_token_probs, seen through generate).
    eval_mode=False: the model, in training mode, ignores the reference's model.eval() (generate-train-mode).
    grad=True: the reference's torch.no_grad() does nothing (generate-grad-enabled; seen on a model with
        `grad_term`).
    seed: the torch.Generator's seed for the draws (None with temperature 0).
    """
    return _decode(generate, model_source, model_name, prompt, max_new_tokens, temperature, top_k, top_p, seed,
                   cache, sampling, eval_mode, grad, position)[0]


def decode_logits(generate, model_source, model_name, prompt, max_new_tokens, temperature=1.0, top_k=None,
                  top_p=None, seed=None, *, cache="yes", eval_mode=True, grad=False, position="last"):
    """The last logits the reference generate chooses each new token from: (max_new_tokens, B, V), float32
    as the course model gives them. next_token_probs is asked about these when generate's tokens
    differ (is the cause in next_token_probs, which generate calls?), and they are the ones the reference
    next_token_probs answers for when generate is graded with it in place of the student's. The switches
    are decode_tokens's (the logits a generate with those mistakes meets)."""
    return _decode(generate, model_source, model_name, prompt, max_new_tokens, temperature, top_k, top_p, seed,
                   cache, None, eval_mode, grad, position)[1]


def model_logits(model_source, model_name, idx, *, training=False, grad=True):
    """The course model's logits for `idx` (no cache) in the given mode: what the model answers after
    generate has returned, when it left the training flag as `training` (train-flag-not-restored
    when that is not the flag it found) and gradients enabled as `grad`. It runs the course model
    alone (the check's subject), no reference."""
    import torch
    model = _course_model(model_source, model_name)
    model.train(training)
    with contextlib.nullcontext() if grad else torch.no_grad():
        return model(torch.as_tensor(idx).long(), cache=None)[0].detach()
