"""Checks for lesson 02: causal and padding masks, and attention that honours them (NumPy)."""
import numpy as np

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import (INT_INVERT, MASK_MISTAKES, causal_pattern, padding_pattern, Mismatch, all_of, call_attention, describe_shape, exercise,
                                        expect_array, expect_attention, expect_varies)
from autograder.run.errors import StudentError

LESSON = "02_masking"


def causal_mutants(causal_mask, n):
    return [("causal-off-by-one", lambda: fingerprints.causal(causal_mask, n, offset=-1),
             N_("the mask blocks the diagonal: a token cannot attend to itself")),
            ("causal-off-by-one", lambda: fingerprints.causal(causal_mask, n, offset=1),
             N_("the mask lets key i + 1 through: one step of the future leaks")),
            ("causal-transposed", lambda: fingerprints.causal(causal_mask, n, upper=True)),
            ("mask-inverted", lambda: ~fingerprints.causal(causal_mask, n))][:4 if n > 1 else 3]
    # n = 1: inverted = diagonal blocked


def as_bool_values(got):
    """Masks are compared by value; their dtype has its own check."""
    if isinstance(got, np.ndarray) and got.dtype.kind in "biuf" and np.isin(got, (0, 1)).all():
        return got.astype(bool)
    return got


@exercise("causal_mask", points=2)
def test_causal_mask_values(student, reference, rng):
    """causal_mask(n) is True exactly where key j <= query i"""
    for n in (*(int(m) for m in rng.choice(np.arange(3, 13), 2, replace=False)), 2, 1):   # hidden sizes with a secret
        got = as_bool_values(student.causal_mask(n))
        expect_array(got, reference.causal_mask(n), call=f"causal_mask({n})",
                     mutants=causal_mutants(reference.causal_mask, n))


@exercise("causal_mask", points=1)
def test_causal_mask_is_boolean(student, rng):
    """causal_mask returns a boolean array of shape (n, n)"""
    n = int(rng.integers(3, 9))
    got = student.causal_mask(n)
    if not isinstance(got, np.ndarray) or got.dtype != np.bool_ or got.shape != (n, n):
        what = (N_("an array of dtype {dtype} and shape {shape}").format(dtype=got.dtype, shape=got.shape)
                if isinstance(got, np.ndarray) else N_("a {kind}").format(kind=type(got).__name__))
        shape_only = isinstance(got, np.ndarray) and got.dtype == np.bool_   # the dtype is right
        raise Mismatch(N_("{function} returned {returned}; expected a bool array of shape {shape} (for example "
                          "np.tril(np.ones((n, n), dtype=bool)))").format(function=f"causal_mask({n})", returned=what,
                                                                          shape=(n, n)),
                       mistake="wrong-shape" if shape_only else "wrong-type")
    # all True or all False is the right type and shape, and masks nothing: no points
    expect_varies(got, call=f"causal_mask({n})", what="its entries")


def padding_mutants(padding_mask, lengths, max_len):
    return [("padding-wrong-axis", lambda: fingerprints.padding(padding_mask, lengths, max_len, on_queries=True)),
            ("mask-inverted", lambda: ~fingerprints.padding(padding_mask, lengths, max_len))]


@exercise("padding_mask", points=2)
def test_padding_mask_values(student, reference, rng):
    """padding_mask marks keys j < lengths[b], shape (batch, 1, max_len)"""
    a, b = (int(m) for m in rng.choice(np.arange(4, 9), 2, replace=False))      # hidden sizes with a secret
    cases = [(list(rng.integers(1, a + 1, 3)), a), ([int(rng.integers(1, b))], b),
             ([0, b, int(rng.integers(1, b))], b), ([a, a], a)]        # an empty and a full sequence too
    for lengths, max_len in cases:
        lengths = np.array(lengths)
        got = as_bool_values(student.padding_mask(lengths, max_len))
        expected = reference.padding_mask(lengths, max_len)
        expect_array(got, expected, call=f"padding_mask({lengths.tolist()}, {max_len})",
                     mutants=padding_mutants(reference.padding_mask, lengths, max_len),
                     signs={"padding-wrong-axis": lambda g, e=expected: g.ndim == 3 and g.shape[1] == e.shape[2]
                            and g.shape[2] in (1, e.shape[2]) and g.shape != e.shape})


@exercise("padding_mask", points=1)
def test_padding_mask_accepts_lists(student, reference, rng):
    """padding_mask accepts lengths as a list and returns the reference's bool array"""
    max_len = int(rng.integers(3, 7))
    lengths = [max_len, int(rng.integers(1, max_len))]                   # a plain list of ints, one padded
    call = f"padding_mask({lengths}, {max_len})"
    got = student.padding_mask(lengths, max_len)
    if not isinstance(got, np.ndarray) or got.dtype != np.bool_:
        what = (N_("dtype {dtype}").format(dtype=got.dtype) if isinstance(got, np.ndarray)
                else N_("a {kind}").format(kind=type(got).__name__))
        raise Mismatch(N_("{call} returned {returned}; expected a bool array").format(call=call, returned=what),
                       mistake="wrong-type")
    expect_varies(got, call=call, what="its entries")
    expect_array(got, reference.padding_mask(np.array(lengths), max_len), call=call,
                 mutants=padding_mutants(reference.padding_mask, np.array(lengths), max_len))


# ------------------------------------------------------------------ attention with masks

def check_masked(student, reference, q, k, v, mask, what, about=MASK_MISTAKES):
    call = f"scaled_dot_product_attention(q, k, v, mask) with {what}; q, k, v {describe_shape(q, k, v)}"
    fn = student.scaled_dot_product_attention
    fn_ref = reference.scaled_dot_product_attention
    expected = fn_ref(q, k, v, mask)
    if np.asarray(mask).dtype.kind not in "iu":
        expect_attention(call_attention(fn, q, k, v, mask, call=call), q, k, v, mask, expected,
                         attention=fn_ref, call=call, about=about)
        return
    # an integer mask: if the same mask as booleans gives another answer, the int mask is mishandled
    try:
        expect_attention(call_attention(fn, q, k, v, mask, call=call), q, k, v, mask, expected,
                         attention=fn_ref, call=call, about=about)
        return
    except (Mismatch, StudentError) as err:
        failure = err
    as_bool = mask.astype(bool)
    try:
        got_bool = call_attention(fn, q, k, v, as_bool, call=call)
        got_int = call_attention(fn, q, k, v, mask, call=call)
    except (Mismatch, StudentError):
        raise failure from None
    same = isinstance(got_int, tuple) and len(got_int) == 2 and all(
        isinstance(a, np.ndarray) and a.shape == b.shape and np.allclose(a, b, equal_nan=True)
        for a, b in zip(got_int, got_bool))
    if same:
        raise failure
    found = [("mask-int-invert", INT_INVERT)]
    try:
        expect_attention(got_bool, q, k, v, as_bool, expected, attention=fn_ref,
                         call=call + " (the mask as booleans)", about=about)
    except Mismatch as other:
        found += other.found
    line = failure.line if isinstance(failure, Mismatch) else f"{call} raised {failure.type}: {failure.message}"
    raise Mismatch(line, found=found)


def qkv(rng, batch, lq, lk, dk, dv, dtype=np.float64):
    return (rng.standard_normal(batch + (lq, dk)).astype(dtype) * 1.5,
            rng.standard_normal(batch + (lk, dk)).astype(dtype) * 1.5,
            rng.standard_normal(batch + (lk, dv)).astype(dtype))


@exercise("scaled_dot_product_attention", points=1)
def test_masked_attention_without_mask(student, reference, rng):
    """attention without a mask still matches the reference"""
    q, k, v = qkv(rng, (2,), 4, 6, 8, 3)
    call = f"scaled_dot_product_attention(q, k, v) with q, k, v {describe_shape(q, k, v)}"
    expect_attention(call_attention(student.scaled_dot_product_attention, q, k, v, None, call=call), q, k, v, None,
                     reference.scaled_dot_product_attention(q, k, v), attention=reference.scaled_dot_product_attention,
                     call=call)


@exercise("scaled_dot_product_attention", points=1)
def test_masked_attention_causal(student, reference, rng):
    """attention honours a causal mask (broadcast over the batch)"""
    for batch, t, dk, dv in [((2,), 5, 4, 3), ((2, 2), 6, 8, 8)]:
        q, k, v = qkv(rng, batch, t, t, dk, dv)
        check_masked(student, reference, q, k, v, causal_pattern(t), f"a causal mask of shape ({t}, {t})")


@exercise("scaled_dot_product_attention", points=1)
def test_masked_attention_padding(student, reference, rng):
    """attention honours a padding mask of shape (batch, 1, Lk), with Lq != Lk"""
    lengths = np.array([5, 2, 4])
    mask = padding_pattern(lengths, 5)
    q, k, v = qkv(rng, (3,), 3, 5, 6, 4)
    check_masked(student, reference, q, k, v, mask, "a padding mask of shape (3, 1, 5)")


@exercise("scaled_dot_product_attention", points=1)
def test_masked_attention_combined_int_mask(student, reference, rng):
    """attention accepts a 0/1 integer mask built by combining causal and padding masks"""
    lengths = np.array([4, 6])
    mask = (causal_pattern(6)[None] & padding_pattern(lengths, 6)).astype(np.int64)   # (2, 6, 6)
    q, k, v = qkv(rng, (2,), 6, 6, 4, 5)
    check_masked(student, reference, q, k, v, mask, "a 0/1 int mask of shape (2, 6, 6)")


@exercise("scaled_dot_product_attention", points=1)
def test_masked_attention_fully_blocked_rows(student, reference, rng):
    """a fully blocked query row gets zero weights and a zero output (no NaN, no leak)"""
    q, k, v = qkv(rng, (2,), 4, 5, 4, 3)
    mask = np.ones((2, 4, 5), dtype=bool)
    mask[0, 1, :] = False          # query 1 of batch 0 may read nothing
    mask[1, 3, :] = False          # query 3 of batch 1 may read nothing
    mask[1, 0, 2:] = False
    one = qkv(rng, (), 4, 5, 4, 3)                      # one sequence too: a batched-only failure hides nothing
    all_of(lambda: check_masked(student, reference, q, k, v, mask, "a mask that blocks two rows entirely"),
           lambda: check_masked(student, reference, *one, mask[0], "a (4, 5) mask that blocks row 1 entirely"))


@exercise("scaled_dot_product_attention", points=1)
def test_masked_attention_float32_large_scores(student, reference, rng):
    """masked attention stays finite for float32 inputs and large scores"""
    q, k, v = qkv(rng, (2,), 5, 5, 4, 3, dtype=np.float32)
    q *= 30
    mask = causal_pattern(5)
    check_masked(student, reference, q, k, v, mask, "a causal mask and scores up to ~1e3 (float32)", about=None)
