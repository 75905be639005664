"""Checks for lesson 01: softmax and scaled dot-product attention (NumPy)."""
import numpy as np

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import (Fingerprints, Mismatch, Variant, all_of, call_attention, describe_shape, exercise,
                                 expect_array, expect_attention, reversed_shape_error)
from autograder.run.errors import StudentError

LESSON = "01_scaled_dot_product_attention"


def softmax_mutants(softmax, x, axis=-1):
    """Fingerprints of softmax(x, axis) (`softmax`: the reference's): each slip alone and in combination."""
    last = axis in (-1, x.ndim - 1)
    found = [Variant.of("softmax-unstable", "no maximum is subtracted before exp()", stable=False),
             Variant.of("softmax-global-max", "the maximum of the whole array is subtracted, not the maximum along "
                        "`axis`",
                        stable="global"),
             Variant.of("softmax-ignores-axis", "the sum runs over every element of the array, whatever `axis` says",
                        axis=None)]
    if last and x.ndim > 1:
        found.append(Variant.of("softmax-wrong-axis", "the softmax normalises over axis -2 instead of the last axis",
                                axis=-2))
    if not last:
        found.append(Variant.of("softmax-ignores-axis", N_("softmax(x, axis={axis}) normalises over the last axis: "
                                                           "the `axis` argument is not used").format(axis=axis), axis=-1))
    if not last and axis % x.ndim != 0:
        found.append(Variant.of("softmax-ignores-axis", N_("softmax(x, axis={axis}) normalises over axis 0: "
                                                           "the `axis` argument is not used").format(axis=axis), axis=0))

    def run(**kw):
        return fingerprints.np_softmax(softmax, x, kw.pop("axis", axis), **kw)
    return Fingerprints(run, found)


def call_softmax(student, x, **kw):
    """The student's softmax; an exception naming x's shape reversed comes from `.T` on a batched array."""
    try:
        return student.softmax(x, **kw)
    except StudentError as err:
        if reversed_shape_error(err, x.shape):
            raise Mismatch(f"softmax(x) with x {describe_shape(x)} raised {err.type}: {err.message}", found=[(
                "batched-transpose", N_("`.T` turns x of shape {shape} into {transposed}: it reverses every axis "
                                        "instead of the last two").format(shape=x.shape, transposed=x.shape[::-1]))]) from None
        raise


@exercise("softmax", points=1)
def test_softmax_matches_reference_on_last_axis(student, reference, rng):
    """softmax matches the reference on random shapes (last axis)"""
    def check(x):
        expect_array(call_softmax(student, x), reference.softmax(x),
                     call=f"softmax(x) with x {describe_shape(x)}", mutants=softmax_mutants(reference.softmax, x, -1),
                     inputs=(x,))

    # every shape is tried, so that a failure on one does not hide a mistake shown by another
    all_of(*[lambda x=(rng.standard_normal(shape) * 3).astype(dtype): check(x)
             for shape in [(5,), (3, 7), (2, 4, 6), (2, 3, 4, 5)] for dtype in (np.float64, np.float32)])


@exercise("softmax", points=1)
def test_softmax_honours_axis(student, reference, rng):
    """softmax normalises over the axis it is given"""
    for shape, axis in [((4, 6), 0), ((3, 5, 2), 1), ((2, 3, 4), -2), ((3, 4), 1)]:
        x = rng.standard_normal(shape) * 2
        expect_array(student.softmax(x, axis=axis), reference.softmax(x, axis=axis),
                     call=f"softmax(x, axis={axis}) with x {describe_shape(x)}",
                     mutants=softmax_mutants(reference.softmax, x, axis))


@exercise("softmax", points=1)
def test_softmax_is_stable_for_large_inputs(student, reference, rng):
    """softmax stays finite for large inputs (1e3 to 1e4)"""
    for scale, dtype in [(1e3, np.float64), (1e4, np.float64), (1e3, np.float32)]:
        x = (rng.standard_normal((3, 8)) * scale).astype(dtype)
        x[0, :] = scale  # a row of equal large values: the answer is uniform
        expect_array(student.softmax(x), reference.softmax(x),
                     call=f"softmax(x) with entries up to {np.abs(x).max():.3g} ({x.dtype})",
                     mutants=softmax_mutants(reference.softmax, x, -1), inputs=(x,),
                     signs={"softmax-unstable": lambda got: not np.isfinite(got).all()})


def qkv(rng, batch, lq, lk, dk, dv, dtype=np.float64, scale=1.0):
    q = (rng.standard_normal(batch + (lq, dk)) * scale).astype(dtype)
    k = (rng.standard_normal(batch + (lk, dk)) * scale).astype(dtype)
    v = rng.standard_normal(batch + (lk, dv)).astype(dtype)
    return q, k, v


def check_attention(student, reference, q, k, v):
    call = f"scaled_dot_product_attention(q, k, v) with q, k, v {describe_shape(q, k, v)}"
    expect_attention(call_attention(student.scaled_dot_product_attention, q, k, v, None, call=call), q, k, v, None,
                     reference.scaled_dot_product_attention(q, k, v), attention=reference.scaled_dot_product_attention,
                     call=call)


@exercise("scaled_dot_product_attention", points=1)
def test_attention_single_sequence(student, reference, rng):
    """attention matches the reference on one sequence (Lq != Lk, d_k != d_v)"""
    for lq, lk, dk, dv in [(3, 5, 4, 6), (6, 2, 8, 3), (1, 4, 16, 2)]:
        check_attention(student, reference, *qkv(rng, (), lq, lk, dk, dv))


@exercise("scaled_dot_product_attention", points=1)
def test_attention_batch_dimensions(student, reference, rng):
    """attention broadcasts over leading batch dimensions"""
    for batch, lq, lk, dk, dv in [((2,), 4, 6, 8, 5), ((2, 3), 5, 3, 4, 7), ((1, 2, 2), 3, 3, 2, 2)]:
        check_attention(student, reference, *qkv(rng, batch, lq, lk, dk, dv))


@exercise("scaled_dot_product_attention", points=1)
def test_attention_scale_is_sqrt_dk(student, reference, rng):
    """scores are divided by sqrt(d_k), the key size"""
    for dk in (16, 64):
        check_attention(student, reference, *qkv(rng, (2,), 4, 7, dk, 3))


@exercise("scaled_dot_product_attention", points=1)
def test_attention_float32(student, reference, rng):
    """attention works on float32 inputs"""
    check_attention(student, reference, *qkv(rng, (3,), 5, 4, 8, 6, dtype=np.float32))


@exercise("scaled_dot_product_attention", points=1)
def test_attention_large_scores(student, reference, rng):
    """attention stays finite when scores are large enough to overflow exp()"""
    q, k, v = qkv(rng, (2,), 4, 5, 4, 3, scale=40.0)   # scores ~ 40*40*2/2 = 1.6e3
    one = qkv(rng, (), 4, 5, 4, 3, scale=40.0)         # one sequence too: a batched-only failure hides nothing
    all_of(lambda: check_attention(student, reference, q, k, v), lambda: check_attention(student, reference, *one))
