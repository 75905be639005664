"""Isolate: what the sandboxed worker loads once, before it forks any child.

NumPy and matplotlib always; PyTorch and IPython only when a lesson to grade uses them (EXTRAS: a
NumPy lesson never pays for torch), each warmed up so that no child pays for lazy initialisation.
The children inherit all of it by fork. Like worker.py, this runs inside the sandbox: it imports
only run/ and isolate/confine.py (bwrap.WORKER_MODULES).
"""
from __future__ import annotations

import os
import sys


def _preload(extras=()) -> list[str]:
    """Import what every lesson's cells use (NumPy, matplotlib) and the worker's own modules, then
    `extras`; returns the extras loaded."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    import numpy  # noqa: F401
    import numpy.random  # noqa: F401 - numpy 2 loads it lazily; seed_everything needs it
    import matplotlib.pyplot  # noqa: F401 - every lesson's setup cell imports it
    _no_layout_pass()
    from autograder.run import executor  # noqa: F401
    from autograder.run import frames, wire  # noqa: F401
    _stub_selfcheck()
    from autograder.isolate import confine
    import landlockpy, pyseccomp  # noqa: F401,E401 - load libseccomp before /usr/lib is narrowed
    try:
        confine.prepare()   # the children's seccomp filters, built once
    except Exception:   # noqa: BLE001 - a kernel or library that refuses: each child reports it
        pass
    return load_extras(extras)


def _load_torch():
    import torch
    torch.set_num_threads(1)
    _warm_up_torch(torch)


def _load_ipython():
    import IPython.display  # noqa: F401 - lesson 04's tables (0.4 s if each child imported it)


# What the worker can load beyond NumPy and matplotlib, by the top-level module a lesson imports
# (load/notebook.py, `extras`). Children forked before a load do not see it; those forked after do.
EXTRAS = {"torch": _load_torch, "IPython": _load_ipython}
_loaded: list[str] = []


def load_extras(extras) -> list[str]:
    for name in extras:
        if name in EXTRAS and name not in _loaded:
            EXTRAS[name]()
            _loaded.append(name)
    return list(_loaded)


def _warm_up_torch(torch):
    """Run once what the lessons' cells use, so lazy initialisation (cpuinfo reads /proc, kernel
    dispatch tables) is done here, once per worker, not again in every child (it
    cost up to 1.5 s per lesson), and before the children lose access to /proc."""
    import torch.nn.functional as F
    from torch import nn
    x = torch.randn(2, 3, 8)
    F.softmax(x @ x.transpose(-1, -2), -1)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    mha(x, x, x)[0].sum().backward()
    with torch.no_grad():
        mha(x, x, x, attn_mask=torch.ones(3, 3, dtype=torch.bool).triu(1))
    F.scaled_dot_product_attention(x[:, None], x[:, None], x[:, None], is_causal=True)
    F.mse_loss(mha(x, x, x)[0], x).backward()
    # Not an optimiser: creating one imports torch._dynamo (1 s), and only the lessons' training
    # demos use one, which are `slow-demo` cells that grading does not run.
    nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True).eval()(x)


def _no_layout_pass():
    """Figures are never looked at while grading (plt.show() does nothing with Agg), but
    tight_layout() draws every text to measure it: up to 0.8 s per lesson. Here it does nothing.
    (Nothing else of matplotlib is warmed up: a child's first figure costs the same either way,
    ~30 ms, and grading draws none.)"""
    import matplotlib.figure
    matplotlib.figure.Figure.tight_layout = lambda self, *args, **kwargs: None


def _stub_selfcheck():
    """Lesson setup cells do `from autograder.selfcheck import checker`. In the sandbox the real
    module (and the checks and reference it needs) is out of reach on purpose; grading calls the
    student's objects from outside, so here a self-check cell simply does nothing."""
    import types
    import autograder
    stub = types.ModuleType("autograder.selfcheck", _stub_selfcheck.__doc__)
    stub.checker = lambda lesson_id: (lambda exercise, obj: 0.0)
    sys.modules["autograder.selfcheck"] = autograder.selfcheck = stub
