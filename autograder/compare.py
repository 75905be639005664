"""Compare and diagnose: is the student's answer the reference's, and if not, which mistake is it?

`expect_array` is what a check calls. When the answer differs, it tries the fingerprints it
was given: `mutants`, [(mistake id, make)] or {id: make}, where make() returns what a
known-buggy variant of the reference returns on the same inputs,
and `signs` (predicates on the answer, for mistakes whose output is not one fixed array). The
first that matches names the mistake. When none matches, the message says plainly what is
wrong (shape, NaN, max error and where) without guessing.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import tolerances
from .mistakes import describe


class Mismatch(AssertionError):
    """A check failed; `mistake` is a catalogue id when the mistake was recognised."""

    def __init__(self, message: str, mistake: str | None = None):
        if mistake:
            message = f"{message}\n{describe(mistake)}"
        super().__init__(message)
        self.mistake = mistake


def as_numpy(x):
    try:
        import torch
        if isinstance(x, torch.Tensor):
            return x.detach().cpu().numpy()
    except ImportError:  # pragma: no cover
        pass
    return x


def _fmt(v) -> str:
    return f"{float(v):.6g}"


def _close(a, b, rtol, atol) -> bool:
    a, b = as_numpy(a), as_numpy(b)
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray) or a.shape != b.shape:
        return False
    try:
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))
    except (TypeError, ValueError):
        return False


def where_different(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    got64, exp64 = got.astype(np.float64), expected.astype(np.float64)
    bad_nan = np.isnan(got64) & ~np.isnan(exp64)
    if bad_nan.any():
        idx = tuple(int(i) for i in np.argwhere(bad_nan)[0])
        return (f"{int(bad_nan.sum())} of {got.size} values are NaN where the reference is finite "
                f"(first at index {idx}, expected {_fmt(exp64[idx])})")
    bad_inf = ~np.isfinite(got64) & np.isfinite(exp64)
    if bad_inf.any():
        idx = tuple(int(i) for i in np.argwhere(bad_inf)[0])
        return f"{int(bad_inf.sum())} values are infinite (first at index {idx}, expected {_fmt(exp64[idx])})"
    err = np.abs(np.nan_to_num(got64 - exp64, nan=np.inf))
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape)) if err.size else ()
    n_bad = int((err > atol + rtol * np.abs(np.nan_to_num(exp64))).sum())
    return (f"{n_bad} of {got.size} values differ; the largest error is {_fmt(err[idx])} at index {idx} "
            f"(expected {_fmt(exp64[idx])}, got {_fmt(got64[idx])})")


def expect_array(got, expected, *, call: str, kind: str = "numpy",
                 mutants=None,
                 signs: dict[str, Callable[[np.ndarray], bool]] | None = None,
                 inputs: tuple = (), tol: tuple[float, float] | None = None) -> None:
    """Fail with a diagnosis unless `got` matches `expected` (kind: "numpy" or "torch").

    `inputs` are the arrays the call was given: float32 inputs loosen the tolerance even when
    NumPy promotes the result to float64 (see tolerances.py).
    """
    rtol, atol = tol or tolerances.for_arrays(*inputs, expected, got)
    mutants = list(mutants.items()) if isinstance(mutants, dict) else list(mutants or [])
    signs = signs or {}
    import torch
    want_type = torch.Tensor if kind == "torch" else np.ndarray
    if not isinstance(got, want_type):
        type_name = "a torch.Tensor" if kind == "torch" else "a NumPy array"
        raise Mismatch(f"{call} returned {_describe_value(got)}; expected {type_name} of shape "
                       f"{tuple(expected.shape)}", mistake="wrong-type")
    got_np, exp_np = as_numpy(got), as_numpy(expected)
    if got_np.dtype.kind not in "biufc":
        raise Mismatch(f"{call} returned an array of dtype {got_np.dtype}; expected numbers", mistake="wrong-type")

    if got_np.shape == exp_np.shape and _close(got_np, exp_np, rtol, atol) \
            and np.array_equal(np.isnan(got_np.astype(np.float64)), np.isnan(exp_np.astype(np.float64))):
        return

    for mistake, make in mutants:
        try:
            candidate = make()
        except Exception:  # a mutant that does not apply to these inputs
            continue
        if candidate is not None and _close(got_np, candidate, rtol, atol):
            raise Mismatch(_summary(call, got_np, exp_np, rtol, atol), mistake=mistake)
    for mistake, test in signs.items():
        try:
            hit = bool(test(got_np))
        except Exception:
            hit = False
        if hit:
            raise Mismatch(_summary(call, got_np, exp_np, rtol, atol), mistake=mistake)
    if got_np.shape != exp_np.shape:
        raise Mismatch(f"{call} returned shape {tuple(got_np.shape)}; expected {tuple(exp_np.shape)}",
                       mistake="wrong-shape")
    raise Mismatch(_summary(call, got_np, exp_np, rtol, atol))


def _summary(call, got, expected, rtol, atol) -> str:
    if got.shape != expected.shape:
        return f"{call} returned shape {tuple(got.shape)}; expected {tuple(expected.shape)}"
    return f"{call} differs from the reference: {where_different(got, expected, rtol, atol)}"


def _describe_value(v) -> str:
    if isinstance(v, tuple):
        return f"a tuple of {len(v)} items"
    if isinstance(v, list):
        return f"a list of {len(v)} items"
    if v is None:
        return "None"
    name = getattr(v, "type_name", None) or type(v).__name__
    return f"a {name}"
