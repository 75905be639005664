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

import math

import numpy as np
import pytest

from . import mutants
from .compare import Fingerprints, Mismatch, Variant, expect_array
from .sandbox import StudentError

__all__ = ["exercise", "expect_array", "expect_attention", "Mismatch", "attention_mutants",
           "blocked_rows", "describe_shape", "Fingerprints", "Variant", "scale_variants", "mask_variants",
           "call_attention", "all_of", "MASK_MISTAKES", "load_lenient"]


def exercise(grade_id: str, points: float = 1):
    return pytest.mark.exercise(grade_id, points=points)


def describe_shape(*arrays) -> str:
    return ", ".join(f"{tuple(a.shape)} {a.dtype}" for a in arrays)


def _r(x) -> str:
    return f"{x:.3g}"


def scale_variants(d_k: int, others=()) -> list[Variant]:
    """The scale mistakes, each in words. others: [(name, size)] of the sizes students divide by
    instead of d_k (d_v, d_model); a variant equal to the right scale is left out."""
    found = [Variant.of("missing-scale", "the scores are not divided by sqrt(d_k) at all", scale="none"),
             Variant.of("wrong-scale", "the scores are divided by d_k instead of sqrt(d_k)", scale="dk"),
             Variant.of("wrong-scale", "the scores are multiplied by sqrt(d_k) instead of divided by it", scale="mul")]
    for name, size in others:
        if size != d_k:
            found.append(Variant.of("wrong-scale", f"the scores are divided by sqrt({name}) instead of sqrt(d_k)",
                                    scale="other", d_other=size))
    return found


def mask_variants(mask, *, module: bool = False) -> list[Variant]:
    if mask is None:
        return []
    found = [Variant.of("mask-inverted", "the pairs the mask marks True/1 (may attend) are the ones blocked",
                        invert=True),
             Variant.of("mask-after-softmax", "the weights are multiplied by the mask after the softmax, so rows "
                        "no longer sum to 1", mask_mode="after"),
             Variant.of("masked-row-nan", "fully blocked rows come out NaN", blocked_rows="nan"),
             Variant.of("masked-row-leak", "blocked scores are filled with -1e9, so a fully blocked row gets "
                        "uniform weights over keys it may not read", fill="-1e9")]
    if not module and np.asarray(mask).dtype.kind in "iu":
        found.append(Variant.of("mask-int-invert", "`~` on the 0/1 integer mask gives -2 and -1, both non-zero, "
                                "so every pair is blocked", int_invert=True))
    return found


def attention_mutants(q, k, v, mask=None, *, which: str) -> Fingerprints:
    """The fingerprints of scaled_dot_product_attention; which = "output" or "weights"."""
    pick = 0 if which == "output" else 1

    def run(**kw):
        return mutants.np_attention(q, k, v, mask, **kw)[pick]

    found = scale_variants(q.shape[-1], [("d_v", v.shape[-1])]) + [
        Variant.of("softmax-wrong-axis", "the softmax normalises over the queries (axis -2), not the keys", axis=-2),
        Variant.of("softmax-unstable", "the softmax subtracts no maximum before exp()", stable=False),
        Variant.of("softmax-global-max", "the softmax subtracts the maximum of all the scores, not each row's", stable="global"),
    ]
    if q.ndim > 2 or k.ndim > 2:
        found.append(Variant.of("batched-transpose", f"`k.T` turns keys of shape {k.shape} into {k.T.shape} "
                                "instead of swapping the last two axes", transpose="T"))
    return Fingerprints(run, found + mask_variants(mask))


def blocked_rows(mask, scores_shape):
    """(..., Lq) bool: the query rows whose keys are all blocked (None without a mask)."""
    if mask is None:
        return None
    return ~np.broadcast_to(np.asarray(mask).astype(bool), scores_shape).any(axis=-1)


def call_attention(fn, q, k, v, mask, *, call: str):
    """Call the student's attention; an exception that `k.T` on batched keys would raise too is named."""
    args = (q, k, v) if mask is None else (q, k, v, mask)
    try:
        return fn(*args)
    except StudentError as err:
        if q.ndim > 2 or k.ndim > 2:
            try:
                with np.errstate(all="ignore"):
                    q @ k.T
            except Exception as mine:   # the same error, word for word, as `q @ k.T`
                if type(mine).__name__ == err.type and str(mine) == err.message:
                    raise Mismatch(f"{call} raised {err.type}: {err.message}", found=[(
                        "batched-transpose", f"`k.T` turns keys of shape {k.shape} into {k.T.shape} instead of "
                        "swapping the last two axes")]) from None
        raise


# What a mask check judges: with only other mistakes (a scale, mixed heads...) it passes, and the
# checks about those mistakes name them.
MASK_MISTAKES = frozenset({"mask-inverted", "mask-after-softmax", "masked-row-nan", "masked-row-leak",
                           "mask-int-invert", "mask-misbroadcast", "padding-wrong-axis"})


def expect_attention(got, q, k, v, mask, expected, *, call: str, about=None) -> None:
    """Check an (output, weights) pair from scaled_dot_product_attention."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        what = type(got).__name__ if not isinstance(got, (tuple, list)) else f"{len(got)} values"
        raise Mismatch(f"{call} returned {what}; expected a pair (output, weights)", mistake="wrong-type")
    exp_out, exp_w = expected
    if all(isinstance(a, np.ndarray) for a in got) and got[0].shape == exp_w.shape != exp_out.shape \
            and got[1].shape == exp_out.shape:
        raise Mismatch(f"{call} returned (weights, output); expected (output, weights)", mistake="wrong-shape")
    rows = blocked_rows(mask, exp_w.shape)
    expect_array(got[1], exp_w, call=f"the weights from {call}", inputs=(q, k, v),
                 mutants=attention_mutants(q, k, v, mask, which="weights"), blocked=rows, about=about)
    expect_array(got[0], exp_out, call=f"the output of {call}", inputs=(q, k, v),
                 mutants=attention_mutants(q, k, v, mask, which="output"), blocked=rows, about=about)


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


def load_lenient(module, shapes: dict, params: dict, what: str) -> dict:
    """Load `params` into the student's module and return the parameters the reference must use.

    A module that lacks some parameters (biases: `bias=False`, or a whole projection) but has the
    right shape for the others gets those, and a missing bias counts as zero for the reference: its
    parameters check fails, and every other check judges the rest of the behaviour on its own. A
    parameter of the wrong shape fails here as before."""
    import torch
    have = module.parameters()
    missing = [n for n in shapes if n not in have]
    if not missing:
        expect_parameters(module, shapes, what)
        module.load_parameters(params)
        return params
    if any(tuple(have[n]) != tuple(shapes[n]) for n in shapes if n in have):
        expect_parameters(module, shapes, what)
    params = dict(params)
    for n in missing:
        if n.endswith(".bias") and n[:-len("bias")] + "weight" in have:
            params[n] = torch.zeros_like(params[n])
    module.load_parameters({n: t for n, t in params.items() if n in have}, strict=False)
    return params


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


def all_of(*checks):
    """Run every check (thunks), even after one fails, and fail once with everything they found:
    a check that stopped at its first failure would hide a second mistake."""
    failures = []
    for check in checks:
        try:
            check()
        except Mismatch as err:
            failures.append(err)
    if failures:
        found = [f for err in failures for f in err.found]
        raise Mismatch("\n".join(dict.fromkeys(err.line for err in failures)), found=found)


def transposed_error(q_shape, k_shape):
    """What `q @ k.T` raises for these (batched) shapes, or None: a student's error that says the
    same, word for word, comes from `.T` on a batched tensor."""
    import warnings

    import torch
    if len(k_shape) <= 2:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.zeros(q_shape) @ torch.zeros(k_shape).permute(*reversed(range(len(k_shape))))
    except Exception as err:
        return (type(err).__name__, str(err))
    return None


def expect_module(call_with, mask, check, *, call: str, shapes=None):
    """Run `check(got, mask)` on call_with(mask); for an integer 0/1 mask, a module that answers
    differently with the same mask as booleans (or raises only with the integers) has mask-int-invert,
    and the answer with booleans is diagnosed for the rest."""
    import torch
    try:
        got = call_with(mask)
        check(got, mask)
        return got
    except (Mismatch, StudentError) as err:
        failure = err
    if isinstance(failure, StudentError) and shapes is not None \
            and transposed_error(*shapes) == (failure.type, failure.message):
        raise Mismatch(f"{call} raised {failure.type}: {failure.message}", found=[(
            "batched-transpose", f"`.T` on the batched keys of shape {tuple(shapes[1])} reverses every axis "
            "instead of swapping the last two")]) from None
    if mask is None or torch.as_tensor(mask).dtype == torch.bool or torch.as_tensor(mask).is_floating_point():
        raise failure
    as_bool = torch.as_tensor(mask).bool()
    try:
        got_bool = call_with(as_bool)
    except (Mismatch, StudentError):
        raise failure from None
    if isinstance(failure, Mismatch):
        got_int = call_with(mask)
        if isinstance(got_int, torch.Tensor) and isinstance(got_bool, torch.Tensor) \
                and got_int.shape == got_bool.shape and torch.allclose(got_int, got_bool, equal_nan=True):
            raise failure
    found = [("mask-int-invert", "the same mask as booleans gives another answer than as 0/1 integers "
              + ("(with the integers the call raised: " + failure.message.splitlines()[0] + ")"
                 if isinstance(failure, StudentError) else "(`~1 == -2` and `~0 == -1`)"))]
    try:
        check(got_bool, as_bool)
    except Mismatch as other:
        found += other.found
    line = failure.line if isinstance(failure, Mismatch) else f"{call} raised {failure.type}: {failure.message}"
    raise Mismatch(line, found=found)


def expect_tensor(got, expected, *, call: str, mutants=None, signs=None, inputs=(), blocked=None,
                  blocked_what="zero", about=None):
    """Like expect_array for tensors; modules compute in float32, so the float32 tolerance applies."""
    from .tolerances import FLOAT32
    expect_array(got, expected, call=call, kind="torch", mutants=mutants, signs=signs,
                 inputs=inputs, tol=FLOAT32, blocked=None if blocked is None else np.asarray(blocked),
                 blocked_what=blocked_what, about=about)
