"""Checks for lesson 05: split_heads, merge_heads and MultiHeadAttention (PyTorch)."""
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
                      mutants=[("heads-mixed", lambda x=x, h=h: fingerprints.split_heads(reference.split_heads, x, h,
                                                                                          mixed=True))])


@exercise("merge_heads", points=1)
def test_merge_heads_matches_reference(student, reference, rng):
    """merge_heads gives (B, T, h * d_k), heads side by side per token"""
    for b, h, t, dk in [(2, 2, 5, 4), (3, 4, 3, 3), (1, 3, 6, 2)]:
        x = tensor(rng, b, h, t, dk)
        expect_tensor(student.merge_heads(x), reference.merge_heads(x),
                      call=f"merge_heads(x) with x of shape {(b, h, t, dk)}",
                      mutants=[("heads-mixed", lambda x=x: fingerprints.merge_heads(reference.merge_heads, x,
                                                                                    mixed=True))])


@exercise("merge_heads", points=1)
def test_merge_heads_inverts_split_heads(student, reference, rng):
    """merge_heads(split_heads(x, h)) gives back x"""
    x = tensor(rng, 2, 7, 12)
    expect_tensor(student.merge_heads(reference.split_heads(x, 4)), x,
                  call="merge_heads(split_heads(x, 4)) with x of shape (2, 7, 12)",
                  mutants=[("heads-mixed", lambda: fingerprints.merge_heads(reference.merge_heads,
                                                                            reference.split_heads(x, 4), mixed=True))])


# ------------------------------------------------------------------------ the module

def no_output_projection(module):
    """The thunk for Fingerprints(given=...): a module with no w_o parameter at all returns the merged
    heads (asked only when an answer differs)."""
    def given():
        if module is None or any(n.startswith("w_o.") for n in module.parameters()):
            return []
        return [Variant.of("missing-output-projection", "the module has no w_o: the merged heads are returned "
                           "as they are", out_proj=False)]
    return given


def mha_mutants(mha_cls, p, q, k, v, mask, h, module=None):
    """The fingerprints of MultiHeadAttention: the reference class `mha_cls` changed (fingerprints.torch_mha)."""
    p64 = {n: t.double() for n, t in fingerprint_params(p).items()}
    args = (mha_cls, p64, q.double(), k.double(), v.double(), mask)
    d_model = q.shape[-1]

    def run(**kw):
        return fingerprints.torch_mha(*args, h=h, **kw)

    found = scale_variants(d_model // h, [("d_model", d_model)]) + [
        # with one key (and the softmax over the keys) a split that mixes positions changes nothing, so
        # "split and merge" and "merge only" give one answer: one variant says both
        Variant.of("heads-mixed", N_("(B, T, d_model) is reshaped straight to (B, {h}, T, {d_k}) without the transpose (and merged back "
                      "the same way)").format(h=h, d_k=d_model // h), heads_mixed=True) if k.shape[1] > 1 else
        Variant.of("heads-mixed", N_("the heads are merged by reshaping (B, {h}, T, {d_k}) straight to (B, T, {d_model}) without moving "
                      "the head axis back").format(h=h, d_k=d_model // h, d_model=d_model), heads_mixed=True),
        Variant.of("heads-mixed", N_("the heads are split by reshaping (B, T, {d_model}) straight to (B, {h}, T, {d_k}) without the "
                      "transpose (the merge moves the head axis back right)").format(h=h, d_k=d_model // h, d_model=d_model),
                   heads_mixed="split") if k.shape[1] > 1 else None,
        Variant.of("kv-reuse-query-projection", "the keys are computed with w_q instead of w_k", k_from="q"),
        Variant.of("kv-reuse-query-projection", "the values are computed with w_q instead of w_v", v_from="q"),
        Variant.of("kv-from-query-input", "the keys are projected from the `query` input instead of `key`",
                   k_in="query"),
        Variant.of("kv-from-query-input", "the values are projected from the `query` input instead of `value`",
                   v_in="query"),
        # "; " ends a clause: the one-key check's words above are then said once, in either order
        Variant.of("heads-mixed", N_("the split is right; the heads are merged by reshaping (B, {h}, T, {d_k}) straight to (B, T, "
                      "{d_model}) without moving the head axis back").format(h=h, d_k=d_model // h, d_model=d_model), heads_mixed="merge")
        if k.shape[1] > 1 else None,
        Variant.of("missing-output-projection", "the merged heads are returned without w_o", out_proj=False),
        Variant.of("softmax-wrong-axis", "the softmax normalises over the heads (dim 1), not the keys: "
                   "nn.Softmax() with no dim picks dim 1 of a 4-D tensor", axis=1),
        Variant.of("softmax-wrong-axis", "the softmax normalises over the queries (dim -2), not the keys", axis=-2)]
    found += mask_variants(mask, module=True) + module_extras("w_o")
    if mask is not None:   # applies when B == h only
        found.append(Variant.of("mask-misbroadcast", "the (B, 1, Lk) mask meets the scores as (1, B, 1, Lk): "
                                "head i reads the mask of sequence i", mask_misbroadcast=True))
    no_wo = no_output_projection(module)
    return Fingerprints(run, found, given=lambda: layout_deviations(p) + no_wo())


BLOCKED_WHAT = N_("w_o's bias (the heads of a blocked row are zero, and w_o maps zero to its bias)")


def make_mha(student, d_model, h, dropout=None):
    """The student's module. Only the checks that test dropout pass a dropout argument, so a class
    without one (the seed document's) is graded on everything else; a dropout parameter without a
    default gets 0.0."""
    if dropout is not None:
        return student.MultiHeadAttention(d_model, h, dropout)
    try:
        return student.MultiHeadAttention(d_model, h)
    except StudentError as err:
        if err.type == "TypeError" and "missing" in err.message and "argument" in err.message:
            return student.MultiHeadAttention(d_model, h, 0.0)
        raise


def takes_dropout(student) -> bool:
    """False for a class whose constructor has no dropout argument at all: it has no dropout, which
    is the contract's default behaviour (dropout=0.0), and the dropout checks judge it as that."""
    try:
        student.MultiHeadAttention(8, 2, 0.5)
    except StudentError as err:
        if err.type == "TypeError" and "positional argument" in err.message and "given" in err.message:
            return False
        raise
    return True


def build(student, rng, d_model, h, dropout=None):
    params = random_parameters(rng, linear_shapes(NAMES, d_model, d_model))
    module = make_mha(student, d_model, h, dropout)
    params = load_lenient(module, linear_shapes(NAMES, d_model, d_model), params, f"MultiHeadAttention({d_model}, {h})",
                          mode=False)
    return module, params


def check_mha(student, reference, rng, *, b, lq, lk, d_model, h, mask=None, what="no mask", dropout=None):
    module, params = build(student, rng, d_model, h, dropout)
    q, k, v = tensor(rng, b, lq, d_model), tensor(rng, b, lk, d_model), tensor(rng, b, lk, d_model)
    call = (f"MultiHeadAttention({d_model}, {h})(query, key, value{', mask' if mask is not None else ''}) "
            f"with Lq={lq}, Lk={lk}, batch {b}, {what}")

    def check(got, m):
        expected = reference_output(reference.MultiHeadAttention, (d_model, h), params, q, k, v, mask=m)
        blocked = None
        if m is not None:
            blocked = ~torch.as_tensor(m).bool().expand(b, h, lq, lk).any(-1).any(1)      # (B, Lq)
        mutants = mha_mutants(reference.MultiHeadAttention, params, q, k, v, m, h, module)
        expect_tensor(got, expected, call=call, mutants=mutants,
                      blocked=blocked, blocked_what=BLOCKED_WHAT, about=None if m is None else MASK_MISTAKES)

    got = expect_module(lambda m: module(q, k, v) if m is None else module(q, k, v, m), mask, check, call=call,
                        allow_all=torch.ones(b, 1, lq, lk, dtype=torch.bool))
    return module, params, (q, k, v), got


def mha_forward(module, x):
    """The module's self-attention output for x; one that needs a mask gets one that allows every key."""
    try:
        got = module(x, x, x)
    except StudentError:
        got = module(x, x, x, torch.ones(x.shape[0], 1, x.shape[1], x.shape[1], dtype=torch.bool))
    return module_output(got, "MultiHeadAttention(8, 2)(x, x, x)", lenient=True)


def expect_mha_computes(student):
    """No points for names, shapes or determinism to a module that computes nothing (a constant, a
    bias, its input, zeros)."""
    expect_module_computes(lambda: make_mha(student, 8, 2), linear_shapes(NAMES, 8, 8), mha_forward, (2, 5, 8),
                           call="MultiHeadAttention(8, 2)(x, x, x)")


@exercise("MultiHeadAttention", points=1)
def test_mha_parameters_and_divisibility(student):
    """MultiHeadAttention has w_q, w_k, w_v, w_o = nn.Linear(d_model, d_model) and rejects d_model % h != 0"""
    expect_parameters(make_mha(student, 12, 3), linear_shapes(NAMES, 12, 12), "MultiHeadAttention(12, 3)",
                      output="w_o")
    expect_mha_computes(student)
    try:
        make_mha(student, 10, 3)
    except StudentError as err:
        if err.type not in ("ValueError", "AssertionError"):   # an assert with a message rejects it too
            raise Mismatch(N_("MultiHeadAttention(10, 3) raised {error}; expected a ValueError explaining that d_model "
                              "must be divisible by num_heads").format(error=err.type)) from None
        if not err.message.strip():
            raise Mismatch(N_("MultiHeadAttention(10, 3) raised {error} with no message; say what is wrong").format(
                error=err.type)) from None
        return
    raise Mismatch("MultiHeadAttention(10, 3) did not raise: 10 is not divisible by 3, so it must raise ValueError")


@exercise("MultiHeadAttention", points=2)
def test_mha_self_attention(student, reference, rng):
    """MultiHeadAttention matches the reference (self-attention, h = 2 and 4)"""
    for b, t, d_model, h in [(2, 5, 8, 2), (3, 6, 24, 4)]:
        module, params = build(student, rng, d_model, h)
        x = tensor(rng, b, t, d_model)

        def check(got, _, x=x, params=params, d_model=d_model, h=h, b=b, t=t, module=module):
            expected = reference_output(reference.MultiHeadAttention, (d_model, h), params, x, x, x)
            expect_tensor(got, expected, call=f"MultiHeadAttention({d_model}, {h})(x, x, x) with x of shape "
                          f"{(b, t, d_model)}",
                          mutants=mha_mutants(reference.MultiHeadAttention, params, x, x, x, None, h, module))

        expect_module(lambda m, module=module, x=x: module(x, x, x) if m is None else module(x, x, x, m), None, check,
                      call=f"MultiHeadAttention({d_model}, {h})(x, x, x)", allow_all=torch.ones(b, 1, t, t, dtype=torch.bool))


@exercise("MultiHeadAttention", points=2)
def test_mha_cross_attention(student, reference, rng):
    """MultiHeadAttention matches the reference (cross-attention, Lq != Lk != d_model)"""
    # every case runs; with one key the layout of the keys cannot matter, so other mistakes show on their own
    all_of(lambda: check_mha(student, reference, rng, b=2, lq=3, lk=7, d_model=12, h=4, what="cross-attention"),
           lambda: check_mha(student, reference, rng, b=3, lq=5, lk=2, d_model=8, h=2, what="cross-attention"),
           lambda: check_mha(student, reference, rng, b=2, lq=3, lk=1, d_model=8, h=2,
                             what="cross-attention with one key"))


@exercise("MultiHeadAttention", points=1)
def test_mha_projections_all_matter(student, reference, rng):
    """changing w_k or w_v changes the output (no projection is ignored)"""
    # judged on the student's own outputs only: a wrong scale or mask does not fail this check
    module, params = build(student, rng, 8, 2)
    q, k, v = tensor(rng, 2, 4, 8), tensor(rng, 2, 5, 8), tensor(rng, 2, 5, 8)
    before = module_output(module(q, k, v), "MultiHeadAttention(8, 2)(query, key, value)")
    unused = projections_unused(module, params, rng, lambda: module_output(
        module(q, k, v), "MultiHeadAttention(8, 2)(query, key, value)"), before, NAMES,
        lambda changed: load_lenient(module, linear_shapes(NAMES, 8, 8), changed, "MultiHeadAttention(8, 2)"))
    if unused:
        raise unused
    for name in ("w_k.weight", "w_v.weight"):
        changed = dict(params)
        changed[name] = params[name] + torch.from_numpy(rng.standard_normal(params[name].shape).astype(np.float32))
        load_lenient(module, linear_shapes(NAMES, 8, 8), changed, "MultiHeadAttention(8, 2)")
        after = module_output(module(q, k, v), "MultiHeadAttention(8, 2)(query, key, value)")
        if after.shape == before.shape and torch.allclose(after, before, atol=1e-6, equal_nan=True):
            raise Mismatch(N_("changing {variable} did not change the output: the {letter} projection is not used")
                           .format(variable=name, letter=name[2]),
                           found=[("kv-reuse-query-projection", (N_("{module} is never used: the keys are computed with "
                                                                    "another projection") if name[2] == 'k' else
                                                                 N_("{module} is never used: the values are computed "
                                                                    "with another projection")).format(
                               module=name.split('.')[0]))])
        load_lenient(module, linear_shapes(NAMES, 8, 8), params, "MultiHeadAttention(8, 2)")


@exercise("MultiHeadAttention", points=1)
def test_mha_padding_mask(student, reference, rng):
    """MultiHeadAttention honours a (B, 1, 1, Lk) padding mask, also when B == h"""
    # B == h first: a mask whose batch axis lands on the head axis raises when B != h, so only
    # this case shows (and names) the silent mask-misbroadcast
    mask = torch.from_numpy(padding_pattern([6, 3], 6)[:, None])             # (2, 1, 1, 6)
    check_mha(student, reference, rng, b=2, lq=4, lk=6, d_model=8, h=2, mask=mask,
              what="a padding mask of shape (2, 1, 1, 6), as many sequences as heads")
    mask = torch.from_numpy(padding_pattern([7, 4, 2], 7)[:, None])          # (3, 1, 1, 7)
    check_mha(student, reference, rng, b=3, lq=5, lk=7, d_model=8, h=2, mask=mask,
              what="a padding mask of shape (3, 1, 1, 7)")


@exercise("MultiHeadAttention", points=1)
def test_mha_causal_mask_and_blocked_rows(student, reference, rng):
    """MultiHeadAttention honours a causal (T, T) mask, and a fully blocked row reads nothing"""
    mask = torch.from_numpy(causal_pattern(5)).repeat(2, 1, 1, 1)            # (2, 1, 5, 5)
    mask[1, 0, 2] = False
    all_of(lambda: check_mha(student, reference, rng, b=2, lq=6, lk=6, d_model=12, h=4,
                             mask=torch.from_numpy(causal_pattern(6)), what="a causal mask of shape (6, 6)"),
           lambda: check_mha(student, reference, rng, b=2, lq=5, lk=5, d_model=8, h=2, mask=mask.int(),
                             what="a 0/1 mask of shape (2, 1, 5, 5) with a fully blocked row"))


@exercise("MultiHeadAttention", points=1)
def test_mha_dropout_off_in_eval(student, rng):
    """with dropout=0.5, eval mode is deterministic and gives the same output as dropout=0"""
    # judged on the student's own outputs only: any other mistake is the value checks' business
    expect_mha_computes(student)
    params = random_parameters(rng, linear_shapes(NAMES, 8, 8))
    q, k, v = tensor(rng, 2, 4, 8), tensor(rng, 2, 6, 8), tensor(rng, 2, 6, 8)
    if not takes_dropout(student):   # no dropout at all: eval mode must still be deterministic
        module = make_mha(student, 8, 2)
        load_lenient(module, linear_shapes(NAMES, 8, 8), params, "MultiHeadAttention(8, 2)", mode=False)
        got, again = module(q, k, v), module(q, k, v)
        if not (isinstance(got, torch.Tensor) and isinstance(again, torch.Tensor) and got.shape == again.shape
                and torch.allclose(got, again, atol=1e-6, equal_nan=True)):
            raise Mismatch(N_("MultiHeadAttention(8, 2) in eval mode gives a different output on each call"))
        return
    with_dropout = student.MultiHeadAttention(8, 2, 0.5)
    load_lenient(with_dropout, linear_shapes(NAMES, 8, 8), params, "MultiHeadAttention(8, 2, 0.5)", mode=False)
    got, again = with_dropout(q, k, v), with_dropout(q, k, v)
    plain = student.MultiHeadAttention(8, 2, 0.0)
    load_lenient(plain, linear_shapes(NAMES, 8, 8), params, "MultiHeadAttention(8, 2, 0.0)", mode=False)
    own = plain(q, k, v)
    if not all(isinstance(t, torch.Tensor) for t in (got, again, own)) or not got.shape == again.shape == own.shape:
        raise Mismatch(N_("MultiHeadAttention(8, 2, dropout=0.5) in eval mode does not return one tensor of the "
                          "same shape each time"))
    if not torch.allclose(got, again, atol=1e-6, equal_nan=True):
        raise Mismatch(N_("MultiHeadAttention(8, 2, dropout=0.5) in eval mode gives a different output on each call"),
                       found=[("dropout-in-eval", N_("two calls in eval mode give different outputs: dropout is "
                                                     "still drawing random masks"))])
    if not torch.allclose(got, own, atol=1e-5, equal_nan=True):
        raise Mismatch(N_("MultiHeadAttention(8, 2, dropout=0.5) in eval mode differs from dropout=0.0"),
                       found=[("dropout-in-eval", N_("in eval mode the output with dropout=0.5 differs from the "
                                                     "output with dropout=0.0 (rescaled or dropped)"))])


def identity_values_params(rng, d_model):
    """w_q, w_k random; w_v and w_o the identity with zero bias: the output is the weighted values."""
    params = random_parameters(rng, linear_shapes(NAMES, d_model, d_model))
    for name in ("w_v", "w_o"):
        params[f"{name}.weight"] = torch.eye(d_model)
        params[f"{name}.bias"] = torch.zeros(d_model)
    return params


@exercise("MultiHeadAttention", points=1)
def test_mha_dropout_active_in_training(student, rng):
    """in training mode dropout=0.5 acts on the attention weights, and dropout=0.0 changes nothing"""
    params = random_parameters(rng, linear_shapes(NAMES, 8, 8))
    x = tensor(rng, 2, 6, 8)
    if not takes_dropout(student):   # no dropout at all: training mode must change nothing
        expect_mha_computes(student)
        module = make_mha(student, 8, 2)
        load_lenient(module, linear_shapes(NAMES, 8, 8), params, "MultiHeadAttention(8, 2)", mode=True)
        trained = torch.as_tensor(module(x, x, x))
        module.eval()
        evaluated = torch.as_tensor(module(x, x, x))
        if trained.shape != evaluated.shape or not torch.allclose(trained, evaluated, atol=1e-5, equal_nan=True):
            raise Mismatch(N_("MultiHeadAttention(8, 2), which takes no dropout argument, gives a different output in "
                              "training mode than in eval mode; without dropout nothing may depend on the mode"))
        return
    failure = None
    try:
        outputs = {}
        for p, mode in [(0.5, True), (0.5, False), (0.0, True)]:
            module = student.MultiHeadAttention(8, 2, p)
            load_lenient(module, linear_shapes(NAMES, 8, 8), params, f"MultiHeadAttention(8, 2, {p})", mode=mode)
            outputs[(p, mode)] = module_output(module(x, x, x), f"MultiHeadAttention(8, 2, {p})(x, x, x)")
        if torch.allclose(outputs[(0.5, True)], outputs[(0.5, False)], atol=1e-6):
            raise Mismatch("MultiHeadAttention(8, 2, dropout=0.5) gives the same output in training and eval mode: "
                           "dropout is not applied (apply nn.Dropout to the attention weights)")
        if not torch.allclose(outputs[(0.0, True)], outputs[(0.5, False)], atol=1e-5):
            raise Mismatch("with dropout=0.0 the training-mode output differs from the eval-mode output; "
                           "only dropout may depend on the mode")
    except (Mismatch, StudentError) as err:
        failure = err
    # the placement is probed whatever happened above, so that its mistake is named too
    placed = dropout_placement(student, rng)
    if placed is None:
        if failure is not None:
            raise failure
        return
    if failure is None:
        raise placed
    first = failure.line if isinstance(failure, Mismatch) else f"MultiHeadAttention(8, 2, 0.5) raised {failure.describe()}"
    raise Mismatch(f"{first}\n{placed.line}", found=list(failure.found if isinstance(failure, Mismatch) else [])
                   + placed.found)


def dropout_placement(student, rng):
    """A Mismatch naming dropout-on-output, or None.

    With w_v = w_o = identity (zero bias) and every value vector all ones, each head's output row is
    (sum of its kept weights) * ones, so dropout on the weights keeps a head's columns equal; dropout
    on the values, the merged heads or the output does not. Each query row is one constant, so a
    residual connection and a LayerNorm inside the module (both act on whole rows) keep that too. A
    module that fails without a mask is called with a mask that allows every key."""
    params = identity_values_params(rng, 8)
    q = torch.from_numpy(np.repeat(rng.integers(-2, 3, (2, 5, 1)) * 0.5, 8, axis=-1).astype(np.float32))
    k, ones = tensor(rng, 2, 7, 8), torch.ones(2, 7, 8)
    module = student.MultiHeadAttention(8, 2, 0.5)
    load_lenient(module, linear_shapes(NAMES, 8, 8), params, "MultiHeadAttention(8, 2, 0.5)")

    def spread(out):   # (B, Lq, h, d_k): the largest difference between columns of one head
        return (out.view(2, 5, 2, 4).amax(-1) - out.view(2, 5, 2, 4).amin(-1)).abs().max()

    def call():
        try:
            return module_output(module(q, k, ones), "", lenient=True)
        except StudentError:
            return module_output(module(q, k, ones, torch.ones(2, 1, 1, 7, dtype=torch.bool)), "", lenient=True)

    module.eval()
    try:
        calm = call()
        if calm.shape != (2, 5, 8) or not torch.isfinite(calm).all() or spread(calm) > 1e-5:
            return None   # another mistake already breaks the probe; the value checks report it
        module.train(True)
        trained = call()
    except (StudentError, Mismatch):
        return None
    if trained.shape == (2, 5, 8) and spread(trained) > 1e-5:
        return Mismatch("MultiHeadAttention(8, 2, dropout=0.5) in training mode, with w_v and w_o set to the "
                        "identity and every value vector all ones: the columns of one head differ within a row",
                        found=[("dropout-on-output", "in training, single features of a head's output are zeroed, "
                                "which dropout on the attention weights never does")])
    return None
