"""Checks for lesson 03: a learned self-attention head (PyTorch)."""
import torch

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import (causal_pattern, padding_pattern, ALWAYS_CAUSAL, MASK_MISTAKES, Fingerprints, Variant, exercise, expect_module, expect_parameters, load_lenient, expect_tensor, linear_shapes,
                                 mask_variants, random_parameters, reference_output, scale_variants,
                                 expect_module_computes, module_output)
from autograder.run.errors import StudentError

LESSON = "03_self_attention_head"
NAMES = ("w_q", "w_k", "w_v")


def head_mutants(head_cls, p, x, mask):
    """The fingerprints of SelfAttentionHead: the reference class `head_cls` changed (fingerprints.torch_head)."""
    x64 = x.double()
    p64 = {k: v.double() for k, v in p.items()}
    d_model, d_k = x.shape[-1], p["w_q.weight"].shape[0]

    def run(**kw):
        return fingerprints.torch_head(head_cls, p64, x64, mask, **kw)

    found = scale_variants(d_k, [("d_model", d_model)]) + [
        Variant.of("kv-reuse-query-projection", "the keys are computed with w_q instead of w_k", k_from="w_q"),
        Variant.of("kv-reuse-query-projection", "the values are computed with w_q instead of w_v", v_from="w_q"),
        Variant.of("batched-transpose", "`.T` on the batched keys reverses every axis instead of swapping the "
                   "last two", transpose="T"),
        Variant.of("softmax-wrong-axis", "the softmax normalises over the batch (dim 0), not the keys: "
                   "nn.Softmax() with no dim picks dim 0 of a 3-D tensor", axis=0),
        Variant.of("softmax-wrong-axis", "the softmax normalises over the queries (dim -2), not the keys", axis=-2)]
    return Fingerprints(run, found + mask_variants(mask, module=True) + [ALWAYS_CAUSAL])


def check_head(student, reference, rng, batch, t, d_model, d_k, mask=None, what="no mask"):
    shapes = linear_shapes(NAMES, d_model, d_k)
    params = random_parameters(rng, shapes)
    x = torch.from_numpy(rng.standard_normal((batch, t, d_model)).astype("float32"))
    head = student.SelfAttentionHead(d_model, d_k)
    params = load_lenient(head, shapes, params, f"SelfAttentionHead({d_model}, {d_k})", mode=False)
    call = (f"SelfAttentionHead({d_model}, {d_k})(x{', mask' if mask is not None else ''}) "
            f"with x of shape {tuple(x.shape)} and {what}")

    def check(got, m):
        expected = reference_output(reference.SelfAttentionHead, (d_model, d_k), params, x, mask=m)
        blocked = None if m is None else ~torch.as_tensor(m).bool().expand(batch, t, t).any(-1)   # (B, T)
        expect_tensor(got, expected, call=call, mutants=head_mutants(reference.SelfAttentionHead, params, x, m),
                      blocked=blocked,
                      blocked_what=N_("zero"), about=None if m is None else MASK_MISTAKES)

    expect_module(lambda m: head(x) if m is None else head(x, m), mask, check, call=call,
                  shapes=((batch, t, d_k), (batch, t, d_k)), allow_all=torch.ones(t, t, dtype=torch.bool))


@exercise("SelfAttentionHead", points=1)
def test_head_has_three_linear_projections(student):
    """SelfAttentionHead has w_q, w_k, w_v = nn.Linear(d_model, d_k) with bias"""
    expect_parameters(student.SelfAttentionHead(12, 5), linear_shapes(NAMES, 12, 5), "SelfAttentionHead(12, 5)")
    expect_module_computes(lambda: student.SelfAttentionHead(12, 5), linear_shapes(NAMES, 12, 5), head_forward,
                           (2, 4, 12), call="SelfAttentionHead(12, 5)(x)")


def head_forward(module, x):
    """The head's output for x; a head that needs a mask gets one that allows every key."""
    try:
        got = module(x)
    except StudentError:
        got = module(x, torch.ones(x.shape[1], x.shape[1], dtype=torch.bool))
    return module_output(got, "SelfAttentionHead(12, 5)(x)", lenient=True)


@exercise("SelfAttentionHead", points=2)
def test_head_matches_reference(student, reference, rng):
    """SelfAttentionHead matches the reference (weights copied in, several shapes)"""
    for batch, t, d_model, d_k in [(2, 5, 8, 4), (3, 7, 16, 6), (1, 1, 6, 6)]:
        check_head(student, reference, rng, batch, t, d_model, d_k)


@exercise("SelfAttentionHead", points=1)
def test_head_causal_mask(student, reference, rng):
    """SelfAttentionHead honours a causal (T, T) mask"""
    mask = torch.from_numpy(causal_pattern(6))
    check_head(student, reference, rng, 2, 6, 10, 4, mask, "a causal mask of shape (6, 6)")


@exercise("SelfAttentionHead", points=1)
def test_head_padding_mask_and_blocked_rows(student, reference, rng):
    """SelfAttentionHead honours a (B, T, T) 0/1 mask, with a fully blocked row giving zeros"""
    mask = torch.from_numpy((causal_pattern(5)[None] & padding_pattern([5, 3], 5)).astype("int64"))
    mask[1, 0, :] = 0
    check_head(student, reference, rng, 2, 5, 8, 3, mask, "a 0/1 mask of shape (2, 5, 5) with one blocked row")
