"""Checks for lesson 07: positional_encoding and TransformerBlock (PyTorch)."""
import numpy as np
import torch

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import (causal_pattern, padding_pattern, Fingerprints, Mismatch, Variant, exercise, expect_module_computes,
                                 expect_parameters, expect_tensor, expect_varies, module_output, random_parameters,
                                 reference_output)
from autograder.grading.plugin import inputs_rng
from autograder.run.errors import StudentError

LESSON = "07_transformer_block"


def tensor(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


# ------------------------------------------------------------------------ positional_encoding

def pe_mutants(encoding, seq_len, d_model):
    """The fingerprints of positional_encoding: the reference's (`encoding`) changed (fingerprints.positional)."""
    def run(**kw):
        return fingerprints.positional(encoding, seq_len, d_model, **kw)
    return Fingerprints(run, [
        Variant.of("pe-sin-cos-swapped", "cosine on the even features and sine on the odd ones", swap=True),
        Variant.of("pe-wrong-frequency", "the exponent is i / d_model with i the pair number, not 2i / d_model",
                   freq="i"),
        Variant.of("pe-wrong-frequency", "the exponent is j / d_model with j the feature index, so odd features "
                   "get a frequency of their own instead of their pair's", freq="feature"),
        Variant.of("pe-wrong-frequency", "p is multiplied by 10000^(2i/d_model) instead of divided by it",
                   freq="inverse"),
        Variant.of("pe-wrong-frequency", "the exponent is 2j / d_model with j the feature index, so feature 2i "
                   "uses 4i / d_model and its cosine partner (4i + 2) / d_model", freq="2feature"),
        # d_model = 2: one sine and one cosine, the same features either way
        Variant.of("pe-concatenated", "the features hold all the sines first, then all the cosines, instead of "
                   "sin and cos alternating", layout="concat") if d_model > 2 else None,
    ])


@exercise("positional_encoding", points=2)
def test_positional_encoding_values(student, reference, rng, secret_key):
    """positional_encoding matches the sinusoidal formula (several lengths and widths)"""
    def sizes(generator):
        return [(int(generator.integers(5, 61)), 2 * int(generator.integers(2, 33))) for _ in range(2)]
    drawn = sizes(rng)   # hidden with a secret
    # a table is a function of its two sizes alone, and the kit records the public sizes' tables:
    # hidden sizes are never those
    public = set(sizes(inputs_rng("test_positional_encoding_values"))) if secret_key else set()
    while public & set(drawn):
        drawn = sizes(rng)
    for seq_len, d_model in [*drawn, (7, 6), (3, 2)]:
        expect_tensor(student.positional_encoding(seq_len, d_model), reference.positional_encoding(seq_len, d_model),
                      call=f"positional_encoding({seq_len}, {d_model})",
                      mutants=pe_mutants(reference.positional_encoding, seq_len, d_model))


@exercise("positional_encoding", points=1)
def test_positional_encoding_dtype_and_odd_width(student):
    """positional_encoding returns float32 and rejects an odd d_model with ValueError"""
    got = student.positional_encoding(4, 8)
    if isinstance(got, torch.Tensor) and got.dtype != torch.float32:
        raise Mismatch(N_("positional_encoding(4, 8) returned a tensor of dtype {dtype}; expected torch.float32 "
                          "(compute in float64 if you like, then convert with .float())").format(dtype=got.dtype),
                       mistake="wrong-type")
    if not isinstance(got, torch.Tensor):
        raise Mismatch(N_("positional_encoding(4, 8) returned {kind}; expected a torch.Tensor").format(
            kind=type(got).__name__), mistake="wrong-type")
    # a constant, or the same row at every position, encodes nothing: no points for its dtype
    expect_varies(got, call="positional_encoding(4, 8)")
    if got.dim() == 2 and got.shape[0] > 1 and torch.allclose(got[0], got[1:], atol=1e-7):
        raise Mismatch(N_("positional_encoding(4, 8) gives every position the same row: it does not encode the "
                          "position (a check like this one gives points only to an answer that computes something)"))
    try:
        student.positional_encoding(4, 7)
    except StudentError as err:
        if err.type != "ValueError":
            raise Mismatch(N_("positional_encoding(4, 7) raised {error}; expected a ValueError saying that "
                              "d_model must be even").format(error=err.type)) from None
        return
    raise Mismatch("positional_encoding(4, 7) did not raise: features come in sine/cosine pairs, so an odd "
                   "d_model must raise ValueError")


# ------------------------------------------------------------------------ TransformerBlock

def block_shapes(d_model, d_ff):
    return {"attn.in_proj_weight": (3 * d_model, d_model), "attn.in_proj_bias": (3 * d_model,),
            "attn.out_proj.weight": (d_model, d_model), "attn.out_proj.bias": (d_model,),
            "norm1.weight": (d_model,), "norm1.bias": (d_model,), "norm2.weight": (d_model,), "norm2.bias": (d_model,),
            "ff.0.weight": (d_ff, d_model), "ff.0.bias": (d_ff,), "ff.2.weight": (d_model, d_ff), "ff.2.bias": (d_model,)}


def block_parameters(rng, d_model, d_ff):
    params = random_parameters(rng, block_shapes(d_model, d_ff))
    for name in ("norm1.weight", "norm2.weight"):      # LayerNorm scales near 1, as after training
        params[name] = params[name] * 0.4 + 1.0
    return params


def block_mutants(block_cls, params, x, mask, h):
    """The fingerprints of TransformerBlock: the reference class `block_cls` changed (fingerprints.torch_block)."""
    p64 = {n: t.double() for n, t in params.items()}

    def run(**kw):
        return fingerprints.torch_block(block_cls, p64, x.double(), mask, h=h, **kw)

    variants = [
        Variant.of("missing-residual", "the feed-forward output replaces x instead of being added to it",
                   residual="attn"),
        Variant.of("missing-residual", "the attention output replaces x instead of being added to it",
                   residual="ff"),
        Variant.of("missing-residual", "neither sublayer's output is added to x", residual="none"),
        Variant.of("post-norm", "LayerNorm is applied after each residual addition (post-norm), not to the "
                   "sublayer's input", norm="post"),
    ]
    if mask is not None:
        variants += [
            # what the code does; why (the mask reaching attn_mask unconverted) is the explanation's
            Variant.of("mask-inverted", "the pairs the course's mask allows (True) are the ones blocked",
                       invert=True),
            Variant.of("mask-inverted", "the pairs the course's mask allows (True) are the ones blocked",
                       invert=True, blocked="zero"),
            Variant.of("mask-misbroadcast", "the (B * num_heads, T, T) mask that nn.MultiheadAttention receives "
                       "has the sequences tiled (0 1 0 1 ...), so a head of one sequence reads another sequence's "
                       "mask", mask_misbroadcast=True),
        ]
    return Fingerprints(run, variants, depth=2)


def build(student, rng, d_model, h, d_ff, dropout=0.0):
    params = block_parameters(rng, d_model, d_ff)
    block = student.TransformerBlock(d_model, h, d_ff, dropout)
    expect_parameters(block, block_shapes(d_model, d_ff), f"TransformerBlock({d_model}, {h}, {d_ff})")
    block.load_parameters(params, mode=False)
    return block, params


def check_block(student, reference, rng, *, b, t, d_model, h, d_ff, mask=None, what="no mask"):
    block, params = build(student, rng, d_model, h, d_ff)
    x = tensor(rng, b, t, d_model)
    got = block(x) if mask is None else block(x, mask)
    expected = reference_output(reference.TransformerBlock, (d_model, h, d_ff), params, x, mask=mask)
    expect_tensor(got, expected, call=f"TransformerBlock({d_model}, {h}, {d_ff})(x{', mask' if mask is not None else ''})"
                  f" with x of shape {(b, t, d_model)}, {what}", mutants=block_mutants(reference.TransformerBlock, params, x, mask, h))


@exercise("TransformerBlock", points=1)
def test_block_parameters(student):
    """TransformerBlock has attn, norm1, norm2 and ff with the documented shapes"""
    expect_parameters(student.TransformerBlock(12, 3, 20), block_shapes(12, 20), "TransformerBlock(12, 3, 20)")
    expect_module_computes(lambda: student.TransformerBlock(12, 3, 20), block_shapes(12, 20),
                           lambda m, x: module_output(m(x), "TransformerBlock(12, 3, 20)(x)", lenient=True),
                           (2, 5, 12), call="TransformerBlock(12, 3, 20)(x)")


@exercise("TransformerBlock", points=2)
def test_block_no_mask(student, reference, rng):
    """TransformerBlock matches the reference without a mask (several shapes)"""
    for b, t, d_model, h, d_ff in [(2, 5, 8, 2, 16), (3, 4, 12, 3, 20), (1, 7, 16, 4, 8)]:
        check_block(student, reference, rng, b=b, t=t, d_model=d_model, h=h, d_ff=d_ff)


@exercise("TransformerBlock", points=2)
def test_block_causal_mask(student, reference, rng):
    """TransformerBlock honours a causal (T, T) mask, True = may attend"""
    check_block(student, reference, rng, b=2, t=6, d_model=12, h=3, d_ff=24,
                mask=torch.from_numpy(causal_pattern(6)), what="a causal mask of shape (6, 6)")
    check_block(student, reference, rng, b=3, t=5, d_model=8, h=2, d_ff=16,
                mask=torch.from_numpy(causal_pattern(5)).int(), what="a 0/1 causal mask of shape (5, 5)")


@exercise("TransformerBlock", points=1)
def test_block_padding_mask(student, reference, rng):
    """TransformerBlock honours a (B, 1, T) padding mask, also when B == num_heads"""
    check_block(student, reference, rng, b=2, t=6, d_model=8, h=2, d_ff=16,
                mask=torch.from_numpy(padding_pattern([6, 3], 6)), what="a padding mask of shape (2, 1, 6)")
    check_block(student, reference, rng, b=3, t=5, d_model=12, h=2, d_ff=16,
                mask=torch.from_numpy(padding_pattern([2, 5, 4], 5)), what="a padding mask of shape (3, 1, 5)")


@exercise("TransformerBlock", points=1)
def test_block_dropout_off_in_eval(student, reference, rng):
    """with dropout=0.5, eval mode gives the same output as no dropout"""
    block, params = build(student, rng, 8, 2, 16, dropout=0.5)
    x = tensor(rng, 2, 5, 8)
    got = block(x)
    expected = reference_output(reference.TransformerBlock, (8, 2, 16), params, x)
    plain, _ = build(student, np.random.default_rng(0), 8, 2, 16)
    plain.load_parameters(params)
    own = plain(x)
    dropped = isinstance(got, torch.Tensor) and isinstance(own, torch.Tensor) and got.shape == own.shape \
        and not torch.allclose(got, own, atol=1e-6)
    expect_tensor(got, expected, call="TransformerBlock(8, 2, 16, dropout=0.5) in eval mode",
                  mutants=block_mutants(reference.TransformerBlock, params, x, None, 2), signs={"dropout-in-eval": lambda g: dropped})


def branch_parameters(params, branch):
    """The block's parameters with one sublayer's output fixed at a constant: the other sublayer's
    last layer is zero (it adds nothing), and this one's weight is zero with a non-zero bias. The
    attention's own dropout (on its weights) then changes nothing, since out_proj ignores its input:
    only dropout on the branch's output, before the residual addition, can change the block's output."""
    p = dict(params)
    for name, last in (("attn", "attn.out_proj"), ("ff", "ff.2")):
        p[f"{last}.weight"] = torch.zeros_like(params[f"{last}.weight"])
        p[f"{last}.bias"] = torch.full_like(params[f"{last}.bias"], 0.75 if name == branch else 0.0)
    return p


@exercise("TransformerBlock", points=1)
def test_block_dropout_active_in_training(student, rng):
    """in training mode dropout=0.5 acts on both residual branches, and dropout=0.0 changes nothing"""
    params = block_parameters(rng, 8, 16)
    x = tensor(rng, 2, 6, 8)

    def run(p, values, mode):
        block = student.TransformerBlock(8, 2, 16, p)
        block.load_parameters(values, mode=mode)
        return module_output(block(x), f"TransformerBlock(8, 2, 16, dropout={p})(x)")

    if torch.allclose(run(0.5, params, True), run(0.5, params, False), atol=1e-6):
        raise Mismatch("TransformerBlock(8, 2, 16, dropout=0.5) gives the same output in training and eval mode: "
                       "dropout is not applied (pass dropout to nn.MultiheadAttention and apply nn.Dropout to "
                       "each sublayer's output before the residual addition)")
    missing = [what for branch, what in (("attn", N_("the attention sublayer's output")),
                                         ("ff", N_("the feed-forward sublayer's output")))
               if torch.allclose(run(0.5, branch_parameters(params, branch), True),
                                 run(0.5, branch_parameters(params, branch), False), atol=1e-6)]
    if missing:
        raise Mismatch(N_("TransformerBlock(8, 2, 16, dropout=0.5) in training mode never drops {branches}: with that "
                          "sublayer's output fixed at a constant (its last layer's weight zero, so the attention's own "
                          "dropout changes nothing), the training-mode output equals the eval-mode one. The docstring "
                          "asks for dropout on both residual branches: pass each sublayer's output through an "
                          "nn.Dropout module of its own before adding it to x").format(branches=" or ".join(missing)))
    if not torch.allclose(run(0.0, params, True), run(0.5, params, False), atol=1e-5):
        raise Mismatch("with dropout=0.0 the training-mode output differs from the eval-mode output; "
                       "only dropout may depend on the mode")
