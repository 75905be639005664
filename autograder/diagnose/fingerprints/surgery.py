"""The means by which a fingerprint changes the reference: its globals, its submodules, its parameters.

A fingerprint never computes attention itself. It runs the reference function or module it is given
(checks pass `reference.<name>` from grading/reference.py: diagnose sits below grading) with one of
these changes, then transforms inputs or outputs. When a solution is rewritten so that a fingerprint's
change no longer applies (the helper it replaces is gone), `with_globals` raises instead of silently
computing the right answer.
"""
from __future__ import annotations

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


def with_forward_globals(cls, **names):
    """A subclass of the reference module class `cls` whose forward reads `names` in place of its globals."""
    return type(cls.__name__, (cls,), {"forward": with_globals(cls.forward, **names)})


def as_module(fn):
    """`fn` as a torch module, to stand in for a submodule (a projection, the output projection)."""
    import torch

    class Stand(torch.nn.Module):
        def forward(self, *args):
            return fn(*args)
    return Stand()
