"""What a check module imports: the exercise marker and the comparison helpers.

    from autograder.checking import exercise, expect_array, expect_attention

    LESSON = "01_scaled_dot_product_attention"

    @exercise("softmax", points=1)
    def test_softmax_rows_sum_to_one(student, reference, rng):
        '''softmax rows sum to one'''
        x = rng.standard_normal((3, 4))
        expect_array(student.softmax(x), reference.softmax(x), call="softmax(x)")

The docstring's first line is the test's name in the report.
"""
from __future__ import annotations

import numpy as np
import pytest

from . import mutants
from .compare import Mismatch, expect_array

__all__ = ["exercise", "expect_array", "expect_attention", "Mismatch", "attention_mutants",
           "blocked_row_signs", "describe_shape"]


def exercise(grade_id: str, points: float = 1):
    return pytest.mark.exercise(grade_id, points=points)


def describe_shape(*arrays) -> str:
    return ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)


def attention_mutants(q, k, v, mask=None, *, which: str):
    """[(mistake, make)] for scaled_dot_product_attention; which = "output" or "weights"."""
    pick = 0 if which == "output" else 1

    def m(**kw):
        return lambda: mutants.np_attention(q, k, v, mask, **kw)[pick]

    found = [
        ("missing-scale", m(scale="none")),
        ("wrong-scale", m(scale="dk")),
        ("wrong-scale", m(scale="mul")),
        ("wrong-scale", m(scale="other", d_other=v.shape[-1])),
        ("softmax-wrong-axis", m(axis=-2)),
        ("softmax-unstable", m(stable=False)),
    ]
    if mask is not None:
        found += [
            ("mask-inverted", m(invert=True)),
            ("mask-inverted", m(invert=True, fill="-1e9")),
            ("mask-after-softmax", m(mask_mode="after")),
            ("masked-row-nan", m(blocked_rows="nan")),
            ("masked-row-leak", m(fill="-1e9")),
        ]
    return found


def blocked_row_signs(mask, scores_shape):
    """Signs of the two fully-blocked-row mistakes, for answers no single mutant reproduces."""
    if mask is None:
        return {}
    blocked = ~np.broadcast_to(np.asarray(mask).astype(bool), scores_shape).any(axis=-1)  # (..., Lq)
    if not blocked.any():
        return {}

    def nan_rows(got):
        return bool(np.isnan(got[blocked]).any())

    def leak_rows(got):
        rows = got[blocked]
        return bool(np.isfinite(rows).all() and np.abs(rows).max() > 1e-6)

    return {"masked-row-nan": nan_rows, "masked-row-leak": leak_rows}


def expect_attention(got, q, k, v, mask, expected, *, call: str) -> None:
    """Check an (output, weights) pair from scaled_dot_product_attention."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        what = type(got).__name__ if not isinstance(got, (tuple, list)) else f"{len(got)} values"
        raise Mismatch(f"{call} returned {what}; expected a pair (output, weights)", mistake="wrong-type")
    exp_out, exp_w = expected
    scores_shape = exp_w.shape
    signs = blocked_row_signs(mask, scores_shape)
    if all(isinstance(a, np.ndarray) for a in got) and got[0].shape == exp_w.shape != exp_out.shape \
            and got[1].shape == exp_out.shape:
        raise Mismatch(f"{call} returned (weights, output); expected (output, weights)", mistake="wrong-shape")
    expect_array(got[1], exp_w, call=f"the weights from {call}", inputs=(q, k, v),
                 mutants=attention_mutants(q, k, v, mask, which="weights"), signs=signs)
    out_signs = {}
    if signs:
        blocked = ~np.broadcast_to(np.asarray(mask).astype(bool), scores_shape).any(axis=-1)
        out_signs = {"masked-row-nan": lambda g: bool(np.isnan(g[blocked]).any()),
                     "masked-row-leak": lambda g: bool(np.isfinite(g[blocked]).all()
                                                       and np.abs(g[blocked]).max() > 1e-6)}
    expect_array(got[0], exp_out, call=f"the output of {call}", inputs=(q, k, v),
                 mutants=attention_mutants(q, k, v, mask, which="output"), signs=out_signs)


# ----------------------------------------------------------------------------- PyTorch helpers

def random_parameters(rng, shapes: dict, scale: float = 0.5) -> dict:
    """float32 tensors for each parameter name (weights copied in, never the student's RNG)."""
    import torch
    return {name: torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))
            for name, shape in shapes.items()}


def linear_shapes(names, d_in, d_out) -> dict:
    shapes = {}
    for n in names:
        shapes[f"{n}.weight"] = (d_out, d_in)
        shapes[f"{n}.bias"] = (d_out,)
    return shapes


def expect_parameters(module, shapes: dict, what: str) -> None:
    """The student's module has exactly these parameter names and shapes."""
    have = module.parameters()
    missing = [n for n in shapes if n not in have]
    wrong = [f"{n} has shape {tuple(have[n])}, expected {shapes[n]}" for n in shapes
             if n in have and tuple(have[n]) != tuple(shapes[n])]
    if missing or wrong:
        problems = ([f"missing parameter(s): {', '.join(missing)}"] if missing else []) + wrong
        raise Mismatch(f"{what}: {'; '.join(problems)}. Its parameters are: "
                       f"{', '.join(f'{n} {tuple(s)}' for n, s in have.items()) or 'none'}",
                       mistake="wrong-shape" if wrong and not missing else None)


def reference_output(cls, init_args, params, *inputs, mask_kw="mask", mask=None, train=False):
    """Run the reference class in float64 with the given (float32) parameters."""
    import torch
    torch.manual_seed(0)
    module = cls(*init_args).double()
    module.train(train)
    with torch.no_grad():
        own = dict(module.named_parameters())
        for name, value in params.items():
            own[name].copy_(value.double())
        kwargs = {} if mask is None else {mask_kw: mask}
        return module(*(x.double() for x in inputs), **kwargs)


def expect_tensor(got, expected, *, call: str, mutants=None, signs=None, inputs=()):
    """Like expect_array for tensors; modules compute in float32, so the float32 tolerance applies."""
    from .tolerances import FLOAT32
    expect_array(got, expected, call=call, kind="torch", mutants=mutants, signs=signs,
                 inputs=inputs, tol=FLOAT32)
