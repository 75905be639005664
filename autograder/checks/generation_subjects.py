"""The language model lesson 09's `generate` is graded on, written for the checks alone.

It is not TinyGPT (the checks never train anything): a small function of the token ids with
random weights drawn from a seed, so the checks build the same model in the student's process
(through the wire, as lesson 06's subjects travel) and in the grader's. It has the lesson's
interface, `model(idx, cache=None) -> (logits (B, T, V), cache)`, where the cache is the ids seen
so far: the logits of a position depend on every token before it, so a generation that drops the
cache gives other tokens. In training mode the logits are perturbed, as dropout would: a
generation that does not switch to eval mode gives other tokens too.

Every verdict rests on the tokens generate returns, which the grader compares with the tokens the
reference generate gives on the same model in its own process (diagnose/fingerprints/generation.py
runs it, as it is or changed): nothing the student's process says about itself decides a grade.
Two switches make the tokens tell what a real model would hide:
  * `cache_term`: the logits also depend on the length of the cache the call was given (T_past),
    as no real model's do. Full recomputation without the cache (T_past is always 0), the whole
    sequence fed with the cache (T_past grows too fast), a cache dropped or never updated all
    give other tokens than the prompt once and then one token at a time with the last cache.
  * `grad_term`: the logits also depend on whether gradients are enabled, so a generation that
    is not under torch.no_grad() gives other tokens.

The model also logs its calls (`log()`): that log lives in the student's process, where a
submission can rewrite it, so the checks read it only to describe a failure, never to grade.
"""
from __future__ import annotations

MODEL_NAME = "course_model"

_SOURCE = '''
class CourseModel(nn.Module):
    def __init__(self, seed, vocab, width, cache_term, grad_term):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.embed = nn.Parameter(torch.randn(vocab, width, generator=g))
        self.mix = nn.Parameter(torch.randn(width, width, generator=g) / math.sqrt(width))
        self.freq = nn.Parameter(torch.rand(width, generator=g) * 2.0)
        self.out = nn.Parameter(torch.randn(width, vocab, generator=g) * 3.0)
        self.noise = torch.randn(64, vocab, generator=g) * 4.0
        self.past = torch.randn(64, vocab, generator=g) * 4.0 if cache_term else None
        self.grad = torch.randn(64, vocab, generator=g) * 4.0 if grad_term else None
        self.calls = []

    def log(self):
        return {{"calls": [list(c) for c in self.calls], "training": bool(self.training)}}

    def forward(self, idx, cache=None):
        idx = torch.as_tensor(idx)
        self.calls.append((list(idx.shape), None if cache is None else int(cache.shape[1]),
                           bool(self.training), bool(torch.is_grad_enabled())))
        t_past = 0 if cache is None else int(cache.shape[1])
        seen = idx.long() if cache is None else torch.cat([cache, idx.long()], dim=1)   # (B, T_past + T)
        x = self.embed[seen]                                                          # (B, T_all, width)
        steps = torch.arange(1, seen.shape[1] + 1, dtype=x.dtype)
        context = x.cumsum(dim=1) / steps[:, None]                                    # running mean
        h = torch.tanh(x + context @ self.mix + torch.sin(steps[:, None] * self.freq))
        logits = h @ self.out                                                         # (B, T_all, V)
        if self.training:                                                             # like dropout
            logits = logits + self.noise[(steps.long() - 1) % 64]
        if self.grad is not None and torch.is_grad_enabled():
            logits = logits + self.grad[(steps.long() - 1) % 64]
        logits = logits[:, -idx.shape[1]:]                                            # (B, T, V)
        if self.past is not None:                                     # what the call was given
            logits = logits + self.past[t_past % 64]
        return logits, seen


{name} = CourseModel({seed}, {vocab}, {width}, {cache_term}, {grad_term})
{name}.train({training})
'''


def source(seed: int, vocab: int, width: int = 8, training: bool = True, cache_term: bool = False,
           grad_term: bool = False) -> str:
    """The model's source: defines the instance `course_model` (in the given training mode)."""
    return _SOURCE.format(name=MODEL_NAME, seed=int(seed), vocab=int(vocab), width=int(width),
                          training=bool(training), cache_term=bool(cache_term), grad_term=bool(grad_term))


GENERATOR_NAME = "course_generator"


def generator_source(seed: int) -> str:
    return f"{GENERATOR_NAME} = torch.Generator().manual_seed({int(seed)})\n"
