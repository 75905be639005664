"""Checks for lesson 03: a learned self-attention head (PyTorch)."""
import torch

from autograder import mutants
from autograder.checking import (exercise, expect_parameters, expect_tensor, linear_shapes,
                                 random_parameters, reference_output)

LESSON = "03_self_attention_head"
NAMES = ("w_q", "w_k", "w_v")


def head_mutants(p, x, mask):
    x64 = x.double()
    p64 = {k: v.double() for k, v in p.items()}

    def run(**kw):
        q = mutants.linear(x64, p64, "w_q")
        k = mutants.linear(x64, p64, "w_q" if kw.pop("k_from_q", False) else "w_k")
        v = mutants.linear(x64, p64, "w_q" if kw.pop("v_from_q", False) else "w_v")
        return lambda: mutants.torch_attention(q, k, v, mask, **kw)[0]

    found = [("missing-scale", run(scale="none")), ("wrong-scale", run(scale="dk")),
             ("wrong-scale", run(scale="mul")),
             ("kv-reuse-query-projection", run(k_from_q=True, v_from_q=True)),
             ("kv-reuse-query-projection", run(k_from_q=True)),
             ("kv-reuse-query-projection", run(v_from_q=True))]
    if mask is not None:
        found += [("mask-inverted", run(invert=True)), ("mask-inverted", run(invert=True, fill="-1e9")),
                  ("mask-after-softmax", run(mask_mode="after")), ("masked-row-leak", run(fill="-1e9"))]
    return found


def check_head(student, reference, rng, batch, t, d_model, d_k, mask=None, what="no mask"):
    shapes = linear_shapes(NAMES, d_model, d_k)
    params = random_parameters(rng, shapes)
    x = torch.from_numpy(rng.standard_normal((batch, t, d_model)).astype("float32"))
    head = student.SelfAttentionHead(d_model, d_k)
    expect_parameters(head, shapes, f"SelfAttentionHead({d_model}, {d_k})")
    head.load_parameters(params)
    head.eval()
    got = head(x) if mask is None else head(x, mask)
    expected = reference_output(reference.SelfAttentionHead, (d_model, d_k), params, x, mask=mask)
    signs = {}
    if mask is not None:
        blocked = ~torch.as_tensor(mask).bool().expand(batch, t, t).any(-1)
        if blocked.any():
            signs = {"masked-row-nan": lambda g: bool(torch.isnan(torch.as_tensor(g)[blocked]).any()),
                     "masked-row-leak": lambda g: bool(torch.as_tensor(g)[blocked].abs().max() > 1e-6)}
    expect_tensor(got, expected, call=f"SelfAttentionHead({d_model}, {d_k})(x{', mask' if mask is not None else ''}) "
                  f"with x of shape {tuple(x.shape)} and {what}",
                  mutants=head_mutants(params, x, mask), signs=signs)


@exercise("SelfAttentionHead", points=1)
def test_head_has_three_linear_projections(student):
    """SelfAttentionHead has w_q, w_k, w_v = nn.Linear(d_model, d_k) with bias"""
    expect_parameters(student.SelfAttentionHead(12, 5), linear_shapes(NAMES, 12, 5), "SelfAttentionHead(12, 5)")


@exercise("SelfAttentionHead", points=2)
def test_head_matches_reference(student, reference, rng):
    """SelfAttentionHead matches the reference (weights copied in, several shapes)"""
    for batch, t, d_model, d_k in [(2, 5, 8, 4), (3, 7, 16, 6), (1, 1, 6, 6)]:
        check_head(student, reference, rng, batch, t, d_model, d_k)


@exercise("SelfAttentionHead", points=1)
def test_head_causal_mask(student, reference, rng):
    """SelfAttentionHead honours a causal (T, T) mask"""
    mask = torch.from_numpy(mutants.causal(6))
    check_head(student, reference, rng, 2, 6, 10, 4, mask, "a causal mask of shape (6, 6)")


@exercise("SelfAttentionHead", points=1)
def test_head_padding_mask_and_blocked_rows(student, reference, rng):
    """SelfAttentionHead honours a (B, T, T) 0/1 mask, with a fully blocked row giving zeros"""
    mask = torch.from_numpy((mutants.causal(5)[None] & mutants.padding([5, 3], 5)).astype("int64"))
    mask[1, 0, :] = 0
    check_head(student, reference, rng, 2, 5, 8, 3, mask, "a 0/1 mask of shape (2, 5, 5) with one blocked row")
