"""The means by which a fingerprint changes the reference: its globals, its submodules, its parameters.

A fingerprint never computes attention itself. It runs the reference function or module it is given
(checks pass `reference.<name>` from grading/reference.py: diagnose sits below grading) with one of
these changes, then transforms inputs or outputs. When a solution is rewritten so that a fingerprint's
change no longer applies (the helper it replaces is gone), `with_globals` raises instead of silently
computing the right answer.
"""
from __future__ import annotations

import contextlib
import functools
import types


def with_globals(fn, **names):
    """`fn` (a reference function) reading `names` in place of the module globals of the same name."""
    missing = set(names) - set(fn.__code__.co_names)
    if missing:
        raise LookupError(f"the reference {fn.__qualname__} no longer uses {sorted(missing)}: update its fingerprints")
    return types.FunctionType(fn.__code__, {**fn.__globals__, **names}, fn.__name__, fn.__defaults__, fn.__closure__)


class Proxy:
    """A module (numpy, torch) as a reference function sees it, with some of its names replaced."""

    def __init__(self, module, **overrides):
        self._module = module
        vars(self).update(overrides)

    def __getattr__(self, name):
        return getattr(self._module, name)


_BUILT: dict = {}      # reference class -> _Built


class _Built:
    """What is kept of a reference module class: its forward (with a globals dict of its own), the
    plain attributes its __init__ sets (num_heads, d_k), and its submodules by kind."""

    def __init__(self, cls, init_args):
        import torch
        template = cls(*init_args)
        self.forward = with_globals(cls.forward)
        self.kind = type(cls.__name__, (), {"__call__": self.forward})
        self.attributes = {k: v for k, v in vars(template).items() if not k.startswith("_") and k != "training"}
        self.children = {}
        for name, child in template.named_children():
            self.children[name] = ("linear" if type(child) is torch.nn.Linear else "identity"
                                   if type(child) is torch.nn.Dropout else child.eval())
        self.busy = False


@contextlib.contextmanager
def built(cls, init_args, p, **names):
    """The reference module `cls(*init_args)` in eval mode with the tensors of `p` (float64) as its
    parameters, its forward reading `names` in place of its globals of the same name: its own forward,
    run on an object whose attributes are its sublayers, an nn.Linear as F.linear with p's weight and
    bias, an nn.Dropout (eval mode) as the identity, any other submodule itself with p's tensors.
    Fingerprints run hundreds of times on one input: this spares the module's construction and
    nn.Module's per-call machinery. Assigning an attribute (a sublayer) changes it for this call only."""
    import torch
    key = (cls, tuple(init_args))
    entry = _BUILT.get(key) or _BUILT.setdefault(key, _Built(cls, init_args))
    missing = set(names) - set(cls.forward.__code__.co_names)
    if missing or entry.busy:
        raise LookupError(f"the reference {cls.__name__}.forward no longer uses {sorted(missing)}: update its "
                          "fingerprints" if missing else f"{cls.__name__} is in use")
    module = entry.kind()
    vars(module).update(entry.attributes)
    for name, kind in entry.children.items():
        if kind == "linear":
            setattr(module, name, functools.partial(torch.nn.functional.linear, weight=p[f"{name}.weight"],
                                                    bias=p[f"{name}.bias"]))
        elif kind == "identity":
            setattr(module, name, lambda t: t)
        else:
            for sub, param in kind.named_parameters():
                param.data = p[f"{name}.{sub}"]
            setattr(module, name, kind)
    scope = entry.forward.__globals__
    saved = {n: scope[n] for n in names}
    entry.busy = True
    try:
        scope.update(names)
        yield module
    finally:
        scope.update(saved)
        entry.busy = False
