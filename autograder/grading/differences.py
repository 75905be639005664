"""What differs, said plainly: the sentences that describe an answer unlike the reference's (its
shape, its NaN or infinities, its largest error and where), with no guess at the cause. compare.py
says them when no fingerprint names the mistake."""
from __future__ import annotations

import numpy as np

from autograder.i18n import N_


def fmt(v) -> str:
    return f"{float(v):.6g}"


def where_different(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> str:
    got64, exp64 = got.astype(np.float64), expected.astype(np.float64)
    bad_nan = np.isnan(got64) & ~np.isnan(exp64)
    if bad_nan.any():
        idx = tuple(int(i) for i in np.argwhere(bad_nan)[0])
        return (N_("{n} of {size} values is NaN where the reference is not NaN (first at index {index}, expected "
                   "{expected})") if bad_nan.sum() == 1 else N_("{n} of {size} values are NaN where the reference is "
                "not NaN (first at index {index}, expected {expected})")).format(n=int(bad_nan.sum()), size=got.size, index=idx, expected=fmt(exp64[idx]))
    bad_inf = ~np.isfinite(got64) & np.isfinite(exp64)
    if bad_inf.any():
        idx = tuple(int(i) for i in np.argwhere(bad_inf)[0])
        signs = {"-inf" if x < 0 else "inf" for x in got64[bad_inf]}   # as NumPy prints it
        which = N_("-inf or inf") if len(signs) == 2 else signs.pop()
        return (N_("{n} value is {which} where the reference is finite (first at index {index}, expected {expected})")
                if bad_inf.sum() == 1 else N_("{n} values are {which} where the reference is finite (first at index "
                "{index}, expected {expected})")).format(n=int(bad_inf.sum()), which=which, index=idx, expected=fmt(exp64[idx]))
    with np.errstate(invalid="ignore"):   # equal infinities (an lse of -inf where it should be) differ by 0, not NaN
        err = np.abs(np.nan_to_num(np.where(got64 == exp64, 0.0, got64 - exp64), nan=np.inf))
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape)) if err.size else ()
    n_bad = int((err > atol + rtol * np.abs(np.nan_to_num(exp64))).sum())
    return (N_("{n} of {size} values differs; the largest error is {error} at index {index} (expected {expected}, "
               "got {got})") if n_bad == 1 else
            N_("{n} of {size} values differ; the largest error is {error} at index {index} (expected {expected}, "
               "got {got})")).format(n=n_bad, size=got.size, error=fmt(err[idx]), index=idx,
                                     expected=fmt(exp64[idx]), got=fmt(got64[idx]))


def summary(call, got, expected, rtol, atol) -> str:
    if got.shape != expected.shape:
        return N_("{call} returned shape {shape}; expected {expected}").format(call=call, shape=tuple(got.shape),
                                                                              expected=tuple(expected.shape))
    # no verb agrees with `call`, which may be plural ("the weights from ...")
    return N_("{call}, compared with the reference: {difference}").format(
        call=call, difference=where_different(got, expected, rtol, atol))


def describe_value(v) -> str:
    if isinstance(v, tuple):
        return N_("a tuple of {n} items").format(n=len(v))
    if isinstance(v, list):
        return N_("a list of {n} items").format(n=len(v))
    if v is None:
        return "None"
    name = getattr(v, "type_name", None) or type(v).__name__
    return f"a {name}"
