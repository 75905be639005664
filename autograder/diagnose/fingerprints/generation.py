"""Fingerprints of lesson 09: RoPE, the sampling distribution, generation."""
from __future__ import annotations

import math

import numpy as np

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


def _course_model(model_source, model_name):
    import torch
    scope = {}
    exec(compile(model_source, "<course model>", "exec"), {"torch": torch, "nn": torch.nn, "math": math,
                                                          "__name__": "course_model"}, scope)
    return scope[model_name]


def _decode(model_source, model_name, prompt, max_new_tokens, temperature, top_k, top_p, seed, cache, sampling,
            eval_mode, grad):
    """(tokens (B, T0 + max_new_tokens), the last logits each new token was chosen from (max_new_tokens, B, V))."""
    import contextlib
    import torch
    model = _course_model(model_source, model_name)
    model.train(not eval_mode)
    generator = None if seed is None else torch.Generator().manual_seed(seed)
    prompt = torch.as_tensor(prompt).long()
    tokens, chosen_from = [prompt], []
    with contextlib.nullcontext() if grad else torch.no_grad():
        logits, state = model(prompt, cache=None)
        first = state
        for step in range(max_new_tokens):
            last = logits[:, -1, :].detach()
            chosen_from.append(last)
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
                elif cache == "whole":
                    logits, state = model(torch.cat(tokens, dim=1), cache=state)
                elif cache == "stale":
                    logits, state = model(token, cache=first)
                else:
                    logits, state = model(token, cache=None)
    return torch.cat(tokens, dim=1), torch.stack(chosen_from)


def decode_tokens(model_source, model_name, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                  seed=None, *, cache="yes", sampling=None, eval_mode=True, grad=False):
    """Lesson 09's generate on a course model built from source (checks/generation_subjects.py), with
    switches. Returns the (B, T0 + max_new_tokens) token ids.

    cache: "yes" (correct: the prompt once, then each new token with the cache it returned last);
        "recompute" (the whole sequence at every step, no cache); "whole" (the whole sequence at
        every step, with the cache); "dropped" (each new token alone without the cache, so the
        model forgets the text before it): cache-not-used. "stale" (each new token with the
        prompt's cache, never the newer one): no catalogue id. On a model without `cache_term`,
        "recompute" gives the right tokens.
    sampling: sample_probs switches as ((name, value), ...) (the mistakes of next_token_probs, seen through generate).
    eval_mode: False runs the model in the training mode it was built in (generate-train-mode).
    grad: True runs without torch.no_grad() (generate-grad-enabled; seen on a model with `grad_term`).
    seed: the torch.Generator's seed for the draws (None with temperature 0).
    """
    return _decode(model_source, model_name, prompt, max_new_tokens, temperature, top_k, top_p, seed, cache,
                   sampling, eval_mode, grad)[0]


def decode_logits(model_source, model_name, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                  seed=None):
    """The last logits a correct generate chooses each new token from: (max_new_tokens, B, V), float32
    as the course model gives them. next_token_probs is asked about these when generate's tokens
    differ (is the cause in next_token_probs, which generate calls?)."""
    return _decode(model_source, model_name, prompt, max_new_tokens, temperature, top_k, top_p, seed, "yes", None,
                   True, False)[1]


def model_logits(model_source, model_name, idx, *, training=False, grad=True):
    """The course model's logits for `idx` (no cache) in the given mode: what the model answers after
    generate has returned, when it left the training flag as `training` (train-flag-not-restored
    when that is not the flag it found) and gradients enabled as `grad`."""
    import contextlib
    import torch
    model = _course_model(model_source, model_name)
    model.train(training)
    with contextlib.nullcontext() if grad else torch.no_grad():
        return model(torch.as_tensor(idx).long(), cache=None)[0].detach()
