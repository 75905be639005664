"""Checks for lesson 05: split_heads, merge_heads and MultiHeadAttention (PyTorch)."""
import numpy as np
import torch

from autograder import mutants
from autograder.checking import (Mismatch, exercise, expect_parameters, expect_tensor, linear_shapes,
                                 random_parameters, reference_output)
from autograder.sandbox import StudentError

LESSON = "05_multi_head_attention"
NAMES = ("w_q", "w_k", "w_v", "w_o")


def tensor(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


# ------------------------------------------------------------------------ split and merge

@exercise("split_heads", points=2)
def test_split_heads_matches_reference(student, reference, rng):
    """split_heads gives (B, h, T, d_k) with each head a slice of every token's features"""
    for b, t, d, h in [(2, 5, 8, 2), (3, 4, 12, 4), (1, 6, 6, 3)]:
        x = tensor(rng, b, t, d)
        expect_tensor(student.split_heads(x, h), reference.split_heads(x, h),
                      call=f"split_heads(x, {h}) with x of shape {(b, t, d)}",
                      mutants=[("heads-mixed", lambda x=x, h=h: mutants.split(x, h, mixed=True))])


@exercise("merge_heads", points=1)
def test_merge_heads_matches_reference(student, reference, rng):
    """merge_heads gives (B, T, h * d_k), heads side by side per token"""
    for b, h, t, dk in [(2, 2, 5, 4), (3, 4, 3, 3), (1, 3, 6, 2)]:
        x = tensor(rng, b, h, t, dk)
        expect_tensor(student.merge_heads(x), reference.merge_heads(x),
                      call=f"merge_heads(x) with x of shape {(b, h, t, dk)}",
                      mutants=[("heads-mixed", lambda x=x: mutants.merge(x, mixed=True))])


@exercise("merge_heads", points=1)
def test_merge_heads_inverts_split_heads(student, reference, rng):
    """merge_heads(split_heads(x, h)) gives back x"""
    x = tensor(rng, 2, 7, 12)
    expect_tensor(student.merge_heads(reference.split_heads(x, 4)), x,
                  call="merge_heads(split_heads(x, 4)) with x of shape (2, 7, 12)",
                  mutants=[("heads-mixed", lambda: mutants.merge(mutants.split(x, 4), mixed=True))])


# ------------------------------------------------------------------------ the module

def mha_mutants(p, q, k, v, mask, h):
    p64 = {n: t.double() for n, t in p.items()}
    args = (p64, q.double(), k.double(), v.double(), mask)

    def run(**kw):
        return lambda: mutants.torch_mha(*args, h=h, **kw)

    found = [("heads-mixed", run(heads_mixed=True)),
             ("kv-reuse-query-projection", run(k_from="q", v_from="q")),
             ("kv-reuse-query-projection", run(k_from="q")),
             ("kv-reuse-query-projection", run(v_from="q")),
             ("missing-output-projection", run(out_proj=False)),
             ("wrong-scale", run(scale="other")),   # sqrt(d_model)
             ("wrong-scale", run(scale="dk")),
             ("wrong-scale", run(scale="mul")),
             ("missing-scale", run(scale="none"))]
    if mask is not None:
        found += [("mask-inverted", run(invert=True)), ("mask-inverted", run(invert=True, fill="-1e9")),
                  ("mask-after-softmax", run(mask_mode="after")), ("masked-row-leak", run(fill="-1e9"))]
    return found


def build(student, rng, d_model, h, dropout=0.0):
    params = random_parameters(rng, linear_shapes(NAMES, d_model, d_model))
    module = student.MultiHeadAttention(d_model, h, dropout)
    expect_parameters(module, linear_shapes(NAMES, d_model, d_model), f"MultiHeadAttention({d_model}, {h})")
    module.load_parameters(params)
    return module.eval(), params


def check_mha(student, reference, rng, *, b, lq, lk, d_model, h, mask=None, what="no mask", dropout=0.0):
    module, params = build(student, rng, d_model, h, dropout)
    q, k, v = tensor(rng, b, lq, d_model), tensor(rng, b, lk, d_model), tensor(rng, b, lk, d_model)
    got = module(q, k, v) if mask is None else module(q, k, v, mask)
    expected = reference_output(reference.MultiHeadAttention, (d_model, h), params, q, k, v, mask=mask)
    expect_tensor(got, expected, call=f"MultiHeadAttention({d_model}, {h})(query, key, value"
                  f"{', mask' if mask is not None else ''}) with Lq={lq}, Lk={lk}, batch {b}, {what}",
                  mutants=mha_mutants(params, q, k, v, mask, h))
    return module, params, (q, k, v), got


@exercise("MultiHeadAttention", points=1)
def test_mha_parameters_and_divisibility(student):
    """MultiHeadAttention has w_q, w_k, w_v, w_o = nn.Linear(d_model, d_model) and rejects d_model % h != 0"""
    expect_parameters(student.MultiHeadAttention(12, 3), linear_shapes(NAMES, 12, 12), "MultiHeadAttention(12, 3)")
    try:
        student.MultiHeadAttention(10, 3)
    except StudentError as err:
        if err.type != "ValueError":
            raise Mismatch(f"MultiHeadAttention(10, 3) raised {err.type}; expected a ValueError explaining "
                           "that d_model must be divisible by num_heads") from None
        if not err.message.strip():
            raise Mismatch("MultiHeadAttention(10, 3) raised ValueError with no message; say what is wrong") from None
        return
    raise Mismatch("MultiHeadAttention(10, 3) did not raise: 10 is not divisible by 3, so it must raise ValueError")


@exercise("MultiHeadAttention", points=2)
def test_mha_self_attention(student, reference, rng):
    """MultiHeadAttention matches the reference (self-attention, h = 2 and 4)"""
    for b, t, d_model, h in [(2, 5, 8, 2), (3, 6, 16, 4)]:
        module, params = build(student, rng, d_model, h)
        x = tensor(rng, b, t, d_model)
        got = module(x, x, x)
        expected = reference_output(reference.MultiHeadAttention, (d_model, h), params, x, x, x)
        expect_tensor(got, expected, call=f"MultiHeadAttention({d_model}, {h})(x, x, x) with x of shape {(b, t, d_model)}",
                      mutants=mha_mutants(params, x, x, x, None, h))


@exercise("MultiHeadAttention", points=2)
def test_mha_cross_attention(student, reference, rng):
    """MultiHeadAttention matches the reference (cross-attention, Lq != Lk != d_model)"""
    check_mha(student, reference, rng, b=2, lq=3, lk=7, d_model=12, h=4, what="cross-attention")
    check_mha(student, reference, rng, b=3, lq=5, lk=2, d_model=8, h=2, what="cross-attention")


@exercise("MultiHeadAttention", points=1)
def test_mha_projections_all_matter(student, reference, rng):
    """changing w_k or w_v changes the output (no projection is ignored)"""
    module, params, (q, k, v), before = check_mha(student, reference, rng, b=2, lq=4, lk=5, d_model=8, h=2,
                                                  what="cross-attention")
    for name in ("w_k.weight", "w_v.weight"):
        changed = dict(params)
        changed[name] = params[name] + torch.from_numpy(rng.standard_normal(params[name].shape).astype(np.float32))
        module.load_parameters(changed)
        after = module(q, k, v)
        if torch.allclose(torch.as_tensor(after), torch.as_tensor(before), atol=1e-6):
            raise Mismatch(f"changing {name} did not change the output: the {name[2]} projection is not used",
                           mistake="kv-reuse-query-projection")
        module.load_parameters(params)


@exercise("MultiHeadAttention", points=1)
def test_mha_padding_mask(student, reference, rng):
    """MultiHeadAttention honours a (B, 1, 1, Lk) padding mask"""
    mask = torch.from_numpy(mutants.padding([7, 4, 2], 7)[:, None])          # (3, 1, 1, 7)
    check_mha(student, reference, rng, b=3, lq=5, lk=7, d_model=8, h=2, mask=mask,
              what="a padding mask of shape (3, 1, 1, 7)")


@exercise("MultiHeadAttention", points=1)
def test_mha_causal_mask_and_blocked_rows(student, reference, rng):
    """MultiHeadAttention honours a causal (T, T) mask, and a fully blocked row reads nothing"""
    check_mha(student, reference, rng, b=2, lq=6, lk=6, d_model=12, h=4,
              mask=torch.from_numpy(mutants.causal(6)), what="a causal mask of shape (6, 6)")
    mask = torch.from_numpy(mutants.causal(5)).repeat(2, 1, 1, 1)            # (2, 1, 5, 5)
    mask[1, 0, 2] = False
    check_mha(student, reference, rng, b=2, lq=5, lk=5, d_model=8, h=2, mask=mask.int(),
              what="a 0/1 mask of shape (2, 1, 5, 5) with a fully blocked row")


@exercise("MultiHeadAttention", points=1)
def test_mha_dropout_off_in_eval(student, reference, rng):
    """with dropout=0.5, eval mode gives the same output as no dropout"""
    params = random_parameters(rng, linear_shapes(NAMES, 8, 8))
    q, k, v = tensor(rng, 2, 4, 8), tensor(rng, 2, 6, 8), tensor(rng, 2, 6, 8)
    with_dropout = student.MultiHeadAttention(8, 2, 0.5)
    with_dropout.load_parameters(params)
    with_dropout.eval()
    got = with_dropout(q, k, v)
    expected = reference_output(reference.MultiHeadAttention, (8, 2), params, q, k, v)
    plain = student.MultiHeadAttention(8, 2, 0.0)
    plain.load_parameters(params)
    plain.eval()
    own = plain(q, k, v)
    dropped = isinstance(got, torch.Tensor) and isinstance(own, torch.Tensor) and got.shape == own.shape \
        and not torch.allclose(got, own, atol=1e-6)
    expect_tensor(got, expected, call="MultiHeadAttention(8, 2, dropout=0.5) in eval mode",
                  mutants=mha_mutants(params, q, k, v, None, 2),
                  signs={"dropout-in-eval": lambda g: dropped})


@exercise("MultiHeadAttention", points=1)
def test_mha_dropout_active_in_training(student, rng):
    """in training mode dropout=0.5 changes the output, and dropout=0.0 does not"""
    params = random_parameters(rng, linear_shapes(NAMES, 8, 8))
    x = tensor(rng, 2, 6, 8)
    outputs = {}
    for p, mode in [(0.5, True), (0.5, False), (0.0, True)]:
        module = student.MultiHeadAttention(8, 2, p)
        module.load_parameters(params)
        module.train(mode)
        outputs[(p, mode)] = torch.as_tensor(module(x, x, x))
    if torch.allclose(outputs[(0.5, True)], outputs[(0.5, False)], atol=1e-6):
        raise Mismatch("MultiHeadAttention(8, 2, dropout=0.5) gives the same output in training and eval mode: "
                       "dropout is not applied (apply nn.Dropout to the attention weights)")
    if not torch.allclose(outputs[(0.0, True)], outputs[(0.5, False)], atol=1e-5):
        raise Mismatch("with dropout=0.0 the training-mode output differs from the eval-mode output; "
                       "only dropout may depend on the mode")
