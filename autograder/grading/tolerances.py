"""How close is close enough: every tolerance the checks use, and why.

A correct answer written differently (einsum instead of matmul, a loop over heads, -inf
instead of masked_fill, float32 arithmetic on float32 inputs) differs from the reference
only by rounding. The smallest real mistake the corpus holds (an output shifted by 1e-3) must
still fail. Both bounds are set from those two facts:

* float64 inputs (the NumPy lessons): rounding error of a softmax-then-matmul over at most a
  few dozen keys is ~1e-15 relative. rtol=1e-6 and atol=1e-9 leave six orders of margin
  below, and sit three orders above the 1e-3 shift. Scores reach ~1e4 in the stability
  checks; after the max is subtracted the weights are still exact to ~1e-12.
* float32 anywhere (float32 inputs, PyTorch modules, whose parameters are float32): one
  rounding is 6e-8 relative; a d_model=32 projection, a softmax and three more matmuls
  accumulate at most ~1e-6 on outputs of size ~1 (seen: max 4e-7 on the corpus). rtol=1e-4
  and atol=1e-5 give a 10x margin and still fail a 1e-3 shift.
* The reference for PyTorch checks is computed in float64 from the same float32 weights, so
  the reference itself contributes no float32 error.
"""
from __future__ import annotations

import numpy as np

FLOAT64 = (1e-6, 1e-9)   # (rtol, atol)
FLOAT32 = (1e-4, 1e-5)


def for_arrays(*arrays) -> tuple[float, float]:
    """The tolerance for comparing results computed from these inputs/outputs."""
    for a in arrays:
        dtype = getattr(a, "dtype", None)
        if dtype is None:
            continue
        name = str(dtype).replace("torch.", "")
        if name in ("float32", "float16", "bfloat16", "complex64"):
            return FLOAT32
    return FLOAT64


def float16(expected) -> tuple[float, float] | None:
    """(rtol, atol) of arithmetic done in float16 (an 11-bit significand: a few of its roundings,
    ~5e-3 of the values' scale), for a float answer; None for others."""
    if expected.dtype.kind != "f" or not expected.size:
        return None
    finite = np.abs(expected[np.isfinite(expected)])
    scale = float(finite.max()) if finite.size else 0.0
    return 5e-3, 5e-3 * max(scale, 1e-12)
