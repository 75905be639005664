"""Checks for lesson 06: the student's own test (graded by mutation) and the fixed class."""
import hashlib
import hmac
import random
import secrets

import numpy as np
import torch

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import (causal_pattern, padding_pattern, MASK_MISTAKES, Fingerprints, Mismatch, Variant, all_of, exercise, expect_module, expect_parameters, load_lenient,
                                 expect_tensor, linear_shapes, fingerprint_params, layout_deviations, mask_variants, module_extras, module_output,
                                 random_parameters,
                                 reference_output, scale_variants, expect_module_computes,
                                 projections_unused)
from autograder.run.errors import StudentError
from autograder.checks import projection_subjects
from autograder.run.wire import ClassSource

LESSON = "06_debugging_projection_reuse"
NAMES = ("q_project", "k_project", "v_project", "o_project")

SUBJECT_TIME = 5.0   # seconds for the student's test on one class


def _seed(student, secret_key) -> int:
    """The order and salts of the subjects. With a course secret, drawn from the secret and the
    submission's code (the same submission always meets the same order; nobody without the secret
    can know it); without one, drawn anew for every grading run. A test that judges behaviour
    gets the same grade whatever the order."""
    if getattr(student, "_subject_seed", None) is None:
        if secret_key:
            digest = hmac.new(secret_key, student._fingerprint().encode(), hashlib.sha256).digest()
            student._subject_seed = int.from_bytes(digest[:4], "little")
        else:
            student._subject_seed = secrets.randbits(32)
    return student._subject_seed


def _run_all(student, secret_key) -> dict[str, list[tuple[str, str]]]:
    """{routing: [(style, "passed" | "assertion: ..." | "error: ...")]}: the student's test on every
    subject of every routing, in one order drawn from _seed (the three checks judge these same
    verdicts). Each subject runs in a fresh sandboxed process of its own that has run only the
    student's definitions (Submission.fresh_call): no memory, scratch folder or process is shared
    between subjects, so counting calls or keeping notes learns nothing."""
    seed = _seed(student, secret_key)
    subjects = [(routing, index, style, src) for routing in projection_subjects.ROUTES
                for index, (style, src) in enumerate(projection_subjects.variants(routing, seed))]
    random.Random(f"order:{seed}").shuffle(subjects)
    found: dict[str, list] = {routing: [] for routing in projection_subjects.ROUTES}
    for routing, index, style, src in subjects:
        verdict = student.test_projections.isolated(ClassSource(projection_subjects.CLASS_NAME, src),
                                                   timeout=SUBJECT_TIME)
        if verdict.get("outcome") == "returned":
            found[routing].append((index, style, "passed"))
            continue
        err = StudentError(verdict.get("error") or {})
        if err.type == "NotImplementedError":
            student._test_not_implemented = err
            raise err
        found[routing].append((index, style, ("assertion: " if err.type == "AssertionError" else "error: ")
                               + err.describe()))
    return {routing: [(style, got) for _, style, got in sorted(verdicts)] for routing, verdicts in found.items()}


def outcome(student, routing: str, secret_key=None) -> list[tuple[str, str]]:
    """[(style, "passed" | "assertion: ..." | "error: ...")] of the student's test on every
    variant of one routing (see projection_subjects.py and _run_all)."""
    if getattr(student, "_test_not_implemented", None) is not None:   # the stub: no need to run it again
        raise student._test_not_implemented
    if getattr(student, "_subject_verdicts", None) is None:
        student._subject_verdicts = _run_all(student, secret_key)
    return student._subject_verdicts[routing]


# how each style of subject (projection_subjects.STYLES) computes attention, in a student's words
WRITTEN = {"split": "this one splits the heads with view and transpose",
           "einsum": "this one computes the heads with torch.einsum",
           "loop": "this one computes one head at a time, in a Python loop",
           "fused": "this one calls F.scaled_dot_product_attention"}


def check_catches(student, buggy, what, secret_key=None):
    for style, got in outcome(student, buggy, secret_key):
        if got == "passed":
            raise Mismatch(f"test_projections returned normally for a class where {what} "
                           f"({WRITTEN.get(style, style)}): it should raise AssertionError",
                           mistake="test-misses-bug")
        if got.startswith("error"):
            raise Mismatch(f"test_projections, given a class where {what}, raised an error instead of "
                           f"AssertionError:\n{got[7:]}")
    if getattr(student, "_correct_verdicts", None) is None:   # the same for the three checks
        student._correct_verdicts = outcome(student, "correct", secret_key)
    for style, verdict in student._correct_verdicts:
        if verdict != "passed":
            raise Mismatch(N_("test_projections fails a correct class ({style}):").format(style=WRITTEN.get(style, style))
                           + f"\n{verdict}", mistake="test-rejects-correct")


@exercise("test_projections", points=2)
def test_student_test_catches_the_buggy_class(student, secret_key):
    """test_projections fails the buggy class and passes correct ones"""
    check_catches(student, "buggy", "keys and values use the query projection", secret_key)


@exercise("test_projections", points=1)
def test_student_test_catches_key_reuse(student, secret_key):
    """test_projections fails a class where only the keys use the query projection"""
    check_catches(student, "keys-only", "only the keys use the query projection", secret_key)


@exercise("test_projections", points=1)
def test_student_test_catches_value_reuse(student, secret_key):
    """test_projections fails a class where only the values use the query projection"""
    check_catches(student, "values-only", "only the values use the query projection", secret_key)


# ------------------------------------------------------------------------ the fixed class

def fixed_mutants(fixed_cls, p, x, mask, h):
    """The fingerprints of FixedMultiHeadAttention: the reference class `fixed_cls` changed
    (fingerprints.torch_fixed)."""
    p64 = {n: t.double() for n, t in fingerprint_params(p).items()}
    d_model = x.shape[-1]

    def run(**kw):
        return fingerprints.torch_fixed(fixed_cls, p64, x.double(), mask, h=h, **kw)

    found = scale_variants(d_model // h, [("d_model", d_model)]) + [
        Variant.of("kv-reuse-query-projection", "the keys are computed with q_project instead of k_project",
                   k_from="q"),
        Variant.of("kv-reuse-query-projection", "the values are computed with q_project instead of v_project",
                   v_from="q"),
        Variant.of("heads-mixed", N_("(B, T, d_model) is reshaped straight to (B, {h}, T, {d_k}) without the transpose (and merged back "
                      "the same way)").format(h=h, d_k=d_model // h), heads_mixed=True),
        Variant.of("heads-mixed", N_("the split is right; the heads are merged by reshaping (B, {h}, T, {d_k}) straight to (B, T, "
                      "{d_model}) without moving the head axis back").format(h=h, d_k=d_model // h, d_model=d_model), heads_mixed="merge"),
        Variant.of("missing-output-projection", "the merged heads are returned without o_project", out_proj=False),
        Variant.of("softmax-wrong-axis", "the softmax normalises over the heads (dim 1), not the keys: "
                   "nn.Softmax() with no dim picks dim 1 of a 4-D tensor", axis=1),
        Variant.of("softmax-wrong-axis", "the softmax normalises over the queries (dim -2), not the keys", axis=-2)]
    return Fingerprints(run, found + mask_variants(mask, module=True) + module_extras("o_project", causal=True),
                        given=lambda: layout_deviations(p))


BLOCKED_WHAT = N_("o_project's bias (the heads of a blocked row are zero, and o_project maps zero to its bias)")


def check_fixed(student, reference, rng, b, t, d_model, h, mask=None, what="no mask"):
    shapes = linear_shapes(NAMES, d_model, d_model)
    params = random_parameters(rng, shapes)
    module = student.FixedMultiHeadAttention(d_model, h, 0.0)
    params = load_lenient(module, shapes, params, f"FixedMultiHeadAttention({d_model}, {h}, 0.0)", mode=False)
    x = torch.from_numpy(rng.standard_normal((b, t, d_model)).astype(np.float32))
    call = (f"FixedMultiHeadAttention({d_model}, {h}, 0.0)(x{', attn_mask' if mask is not None else ''})"
            f" with x of shape {(b, t, d_model)}, {what}")

    def check(got, m):
        expected = reference_output(reference.FixedMultiHeadAttention, (d_model, h, 0.0), params, x,
                                    mask_kw="attn_mask", mask=m)
        blocked = None if m is None else ~torch.as_tensor(m).bool().expand(b, t, t).any(-1)     # (B, T)
        mutants = fixed_mutants(reference.FixedMultiHeadAttention, params, x, m, h)
        expect_tensor(got, expected, call=call, mutants=mutants,
                      blocked=blocked, blocked_what=BLOCKED_WHAT, about=None if m is None else MASK_MISTAKES)

    got = expect_module(lambda m: module(x) if m is None else module(x, m), mask, check, call=call,
                        allow_all=torch.ones(b, t, t, dtype=torch.bool))
    return module, params, x, got


@exercise("FixedMultiHeadAttention", points=1)
def test_fixed_has_four_projections(student):
    """FixedMultiHeadAttention has q_project, k_project, v_project, o_project = nn.Linear(d_model, d_model)"""
    expect_parameters(student.FixedMultiHeadAttention(8, 2, 0.0), linear_shapes(NAMES, 8, 8),
                      "FixedMultiHeadAttention(8, 2, 0.0)", output="o_project")
    expect_module_computes(lambda: student.FixedMultiHeadAttention(8, 2, 0.0), linear_shapes(NAMES, 8, 8),
                           lambda m, x: module_output(m(x), "FixedMultiHeadAttention(8, 2, 0.0)(x)", lenient=True),
                           (2, 5, 8), call="FixedMultiHeadAttention(8, 2, 0.0)(x)")


@exercise("FixedMultiHeadAttention", points=2)
def test_fixed_matches_reference(student, reference, rng):
    """FixedMultiHeadAttention matches the reference (h = 2 and 4, weights copied in)"""
    all_of(lambda: check_fixed(student, reference, rng, 2, 5, 8, 2),
           lambda: check_fixed(student, reference, rng, 3, 4, 16, 4),
           lambda: dropout_placement(student, rng))


def dropout_placement(student, rng):
    """With v/o_project the identity and x all ones, dropout on the weights keeps each head's columns
    equal within a row (every value vector is all ones); dropout on the output does not."""
    shapes = linear_shapes(NAMES, 8, 8)
    params = random_parameters(rng, shapes)
    for name in ("v_project", "o_project"):
        params[f"{name}.weight"], params[f"{name}.bias"] = torch.eye(8), torch.zeros(8)
    module = student.FixedMultiHeadAttention(8, 2, 0.5)
    load_lenient(module, shapes, params, "FixedMultiHeadAttention(8, 2, 0.5)")
    x = torch.ones(2, 5, 8)

    def spread(out):   # the largest difference between the columns of one head
        return (out.view(2, 5, 2, 4).amax(-1) - out.view(2, 5, 2, 4).amin(-1)).abs().max()

    module.eval()
    calm = module_output(module(x), "FixedMultiHeadAttention(8, 2, 0.5)(x)", lenient=True)
    if calm.shape != (2, 5, 8) or not torch.isfinite(calm).all() or spread(calm) > 1e-5:
        return   # another mistake already breaks the probe; the value checks report it
    module.train(True)
    trained = module_output(module(x), "FixedMultiHeadAttention(8, 2, 0.5)(x)", lenient=True)
    if trained.shape == (2, 5, 8) and spread(trained) > 1e-5:
        raise Mismatch("FixedMultiHeadAttention(8, 2, dropout=0.5) in training mode, with v_project and o_project "
                       "the identity and x all ones: the columns of one head differ within a row",
                       found=[("dropout-on-output", "in training, single features of a head's output are zeroed, "
                               "which dropout on the attention weights never does")])


@exercise("FixedMultiHeadAttention", points=1)
def test_fixed_uses_every_projection(student, reference, rng):
    """changing k_project or v_project changes the output of FixedMultiHeadAttention"""
    # judged on the student's own outputs only: a wrong scale or mask does not fail this check
    shapes = linear_shapes(NAMES, 8, 8)
    params = random_parameters(rng, shapes)
    module = student.FixedMultiHeadAttention(8, 2, 0.0)
    params = load_lenient(module, shapes, params, "FixedMultiHeadAttention(8, 2, 0.0)", mode=False)
    x = torch.from_numpy(rng.standard_normal((2, 5, 8)).astype(np.float32))
    before = module_output(module(x), "FixedMultiHeadAttention(8, 2, 0.0)(x)")
    unused = projections_unused(module, params, rng, lambda: module_output(
        module(x), "FixedMultiHeadAttention(8, 2, 0.0)(x)"), before, NAMES,
        lambda changed: load_lenient(module, shapes, changed, "FixedMultiHeadAttention(8, 2, 0.0)"))
    if unused:
        raise unused
    for name in ("k_project.weight", "v_project.weight"):
        changed = dict(params)
        changed[name] = params[name] + torch.from_numpy(rng.standard_normal(params[name].shape).astype(np.float32))
        load_lenient(module, shapes, changed, "FixedMultiHeadAttention(8, 2, 0.0)")
        if torch.allclose(module_output(module(x), "FixedMultiHeadAttention(8, 2, 0.0)(x)"), before, atol=1e-6):
            raise Mismatch(f"changing {name} did not change the output: {name.split('.')[0]} is never used",
                           found=[("kv-reuse-query-projection", (N_("{module} is never used: the keys are computed "
                                                                    "with q_project") if name[0] == 'k' else
                                                                 N_("{module} is never used: the values are computed "
                                                                    "with q_project")).format(module=name.split('.')[0]))])
        load_lenient(module, shapes, params, "FixedMultiHeadAttention(8, 2, 0.0)")


@exercise("FixedMultiHeadAttention", points=1)
def test_fixed_attn_mask(student, reference, rng):
    """FixedMultiHeadAttention honours a (B, T, T) attn_mask (1 = attend), fully blocked rows included"""
    mask = torch.from_numpy((causal_pattern(5)[None] & padding_pattern([5, 3], 5)).astype(np.int64))
    mask[0, 2] = 0
    check_fixed(student, reference, rng, 2, 5, 8, 2, mask, "a causal & padding attn_mask with a blocked row")
