"""Checks for lesson 08: repeat_kv and CausalSelfAttention with a KV cache and GQA (PyTorch)."""
import numpy as np
import torch

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import (Fingerprints, Mismatch, Variant, exercise, expect_module_computes,
                                 expect_parameters, expect_tensor, random_parameters, scale_variants)
from autograder.run.errors import StudentError

LESSON = "08_fast_attention"


def tensor(rng, *shape):
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32))


# ------------------------------------------------------------------------ repeat_kv

def repeat_mutants(repeat_kv, x, n_rep):
    found = [Variant.of("kv-repeat-order", "the heads come out tiled (head j holds key/value head j % h_kv: 0 1 0 1 "
                        "...) instead of each repeated in a row (head j holds head j // n_rep: 0 0 1 1 ...)",
                        order="tile") if x.shape[1] > 1 and n_rep > 1 else None]
    if n_rep > 1:
        found += [Variant.of("kv-repeat-wrong-axis", what, axis=axis) for axis, what in (
            (0, N_("the repetition runs along the batch axis (dim 0) instead of the head axis (dim 1)")),
            (2, N_("the repetition runs along the time axis (dim 2) instead of the head axis (dim 1)")),
            (3, N_("the repetition runs along the feature axis (dim 3) instead of the head axis (dim 1)")))]
    return Fingerprints(lambda **kw: fingerprints.repeat_heads(repeat_kv, x, n_rep, **kw), found, depth=1)


@exercise("repeat_kv", points=2)
def test_repeat_kv_matches_reference(student, reference, rng):
    """repeat_kv gives (B, h_kv * n_rep, T, d_k) with each head repeated in a row (several shapes)"""
    for b, h_kv, t, d_k, n_rep in [(2, 2, 5, 4, 3), (1, 4, 3, 2, 2), (3, 1, 4, 3, 4), (2, 3, 2, 5, 1)]:
        x = tensor(rng, b, h_kv, t, d_k)
        expect_tensor(student.repeat_kv(x, n_rep), reference.repeat_kv(x, n_rep),
                      call=f"repeat_kv(x, {n_rep}) with x of shape {(b, h_kv, t, d_k)}",
                      mutants=repeat_mutants(reference.repeat_kv, x, n_rep))


@exercise("repeat_kv", points=1)
def test_repeat_kv_head_j_reads_head_j_div_n_rep(student, reference, rng):
    """head j of repeat_kv(x, n_rep) is key/value head j // n_rep"""
    h_kv, n_rep, t = int(rng.integers(2, 5)), int(rng.integers(2, 4)), int(rng.integers(2, 6))
    x = torch.arange(float(h_kv)).view(1, h_kv, 1, 1).expand(2, h_kv, t, 2).contiguous()   # head i holds i
    got = student.repeat_kv(x, n_rep)
    expected = (torch.arange(h_kv * n_rep) // n_rep).float().view(1, -1, 1, 1).expand(2, h_kv * n_rep, t, 2)
    expect_tensor(got, expected, call=f"repeat_kv(x, {n_rep}) with x of shape {(2, h_kv, t, 2)} whose head i "
                  "holds the number i", mutants=repeat_mutants(reference.repeat_kv, x, n_rep))


# ------------------------------------------------------------------------ CausalSelfAttention

def shapes(d_model, h, h_kv):
    d_kv = h_kv * (d_model // h)
    return {"w_q.weight": (d_model, d_model), "w_q.bias": (d_model,), "w_k.weight": (d_kv, d_model),
            "w_k.bias": (d_kv,), "w_v.weight": (d_kv, d_model), "w_v.bias": (d_kv,),
            "w_o.weight": (d_model, d_model), "w_o.bias": (d_model,)}


def build(student, rng, d_model, h, h_kv):
    params = random_parameters(rng, shapes(d_model, h, h_kv))
    module = student.CausalSelfAttention(d_model, h, h_kv)
    expect_parameters(module, shapes(d_model, h, h_kv), f"CausalSelfAttention({d_model}, {h}, {h_kv})")
    module.load_parameters(params, mode=False)
    return module, {n: t.double() for n, t in params.items()}


def ref_run(reference, p, h, h_kv, x, cache=None):
    """The reference module in float64 with the parameters p: (output, cache)."""
    module = reference.CausalSelfAttention(x.shape[-1], h, h_kv).double().eval()
    with torch.no_grad():
        module.load_state_dict(p)
        return module(x.double(), None if cache is None else tuple(c.double() for c in cache))


def unpack(got, call):
    if not isinstance(got, tuple) or len(got) != 2:
        what = N_("a tuple of {n} items").format(n=len(got)) if isinstance(got, tuple) else type(got).__name__
        raise Mismatch(N_("{call} returned {returned}; expected a pair (output, cache)").format(call=call, returned=what),
                       mistake="wrong-type")
    return got


def run_variants(h, h_kv, d_model, chunked, chunks=None):
    """The fingerprints of a causal_step / causal_chunks run (switch names as in fingerprints.causal_step).
    Token by token (every chunk one token), an upper-triangular mask lets each token read only itself,
    exactly as a cache that is never passed on: that variant is left to the whole-sequence checks."""
    found = scale_variants(d_model // h, [("d_model", d_model)]) + [
        Variant.of("heads-mixed", "heads are split/merged with view/reshape and no transpose", heads_mixed=True),
        Variant.of("causal-off-by-one", "the causal mask blocks each token from itself", causal="diag"),
        Variant.of("causal-off-by-one", "the causal mask lets each token see the next one", causal="next"),
        Variant.of("causal-transposed", "the causal mask is upper-triangular: tokens read the future",
                   causal="upper"),
        # one token at a time needs no mask: a module without one is seen only with several tokens at once,
        # and told from "no mask once a cache is given" only by a first piece of several tokens
        Variant.of("causal-mask-missing", "no causal mask is applied: every token reads the tokens after it",
                   causal="none") if not chunked or (chunks is not None and chunks[0] > 1) else None]
    found = [v for v in found if v is not None]
    if chunks is not None and all(n == 1 for n in chunks):
        found = [v for v in found if v.mistake != "causal-transposed"]
    if 1 < h_kv < h:
        found.append(Variant.of("kv-repeat-order", "the key/value heads are tiled (query head j reads key/value "
                                "head j % h_kv) instead of repeated in a row (head j // n_rep), so query heads read "
                                "another group's keys and values", order="tile"))
    if chunked:
        found += [
            Variant.of("cache-causal-offset", "the mask of the new tokens is the lower triangle of the (T, T_past + T) "
                       "rectangle without the T_past offset, so new tokens cannot see most of the cache",
                       offset="ignore"),
            # after a given cache, "no mask with a cache" and "no mask at all" are one answer: only a run
            # whose first piece has several tokens tells them apart
            Variant.of("cache-causal-offset", "with a cache no causal mask is applied, so new tokens see the new "
                       "tokens after them", offset="none") if chunks is not None else None,
            # told apart from "ignore" only by a run with one-token and longer pieces after the first
            Variant.of("cache-causal-offset", "one new token reads every cached key (right), but several new tokens "
                       "after a cache get the top-left corner of the causal mask, without the T_past offset, so they "
                       "cannot see most of the cache", offset="whisper")
            if chunks is not None and {1} < {min(n, 2) for n in chunks[1:]} else None,
            Variant.of("cache-order-reversed", "the new keys and values are concatenated before the cached ones, "
                       "[new, old], instead of after them", cache_order="new-old"),
            Variant.of("cache-not-appended", "the cache returned is the one passed in, without the new keys and "
                       "values", append="old"),
            Variant.of("cache-not-appended", "the cache returned holds only the new keys and values, not the "
                       "cached ones before them", append="new"),
            Variant.of("cache-not-appended", "None is returned instead of the cache", append="none")]
    return [v for v in found if v is not None]


def cache_variants(h, h_kv, given: bool):
    """The fingerprints of a returned cache (switch names as in fingerprints.causal_step)."""
    found = [v for v in run_variants(h, h_kv, h, True) if v.mistake == "cache-not-appended"]
    if given:
        found.append(Variant.of("cache-order-reversed", "the cache returned holds the new keys and values before "
                                "the cached ones, [new, old]", cache_order="new-old"))
    if h_kv < h:
        found.append(Variant.of("cache-stores-repeated", N_("the cache holds {h} key/value heads, the {h_kv} repeated "
                                                            "{n_rep} times each, instead of the {h_kv} heads themselves")
                                .format(h=h, h_kv=h_kv, n_rep=h // h_kv), store="repeated"))
    return found


def expect_cache(got_cache, expected, call, fingerprints=None):
    if not isinstance(got_cache, tuple) or len(got_cache) != 2:
        what = "None" if got_cache is None else type(got_cache).__name__
        raise Mismatch(f"{call} returned {what} as the cache; expected a tuple (k, v) holding the keys and values "
                       "of every token so far", mistake="cache-not-appended" if got_cache is None else "wrong-type")
    for i, name in enumerate("kv"):
        mutants_i = None
        if fingerprints is not None:
            mutants_i = Fingerprints(lambda i=i, **kw: _cache_part(fingerprints.run(**kw), i), fingerprints.variants,
                                     depth=1)
        expect_tensor(got_cache[i], expected[i], call=f"the cached {name} returned by {call}", mutants=mutants_i)


def _cache_part(cache, i):
    return None if cache is None else cache[i]


@exercise("CausalSelfAttention", points=1)
def test_parameters_and_divisibility(student):
    """CausalSelfAttention has w_q, w_k, w_v, w_o of the documented shapes and rejects bad head counts"""
    expect_parameters(student.CausalSelfAttention(12, 4), shapes(12, 4, 4), "CausalSelfAttention(12, 4)")
    expect_parameters(student.CausalSelfAttention(12, 4, 2), shapes(12, 4, 2), "CausalSelfAttention(12, 4, 2)")
    expect_parameters(student.CausalSelfAttention(12, 4, 1), shapes(12, 4, 1), "CausalSelfAttention(12, 4, 1)")

    def forward(module, x):
        got = module(x)
        return got[0] if isinstance(got, tuple) and got else got
    expect_module_computes(lambda: student.CausalSelfAttention(12, 4, 2), shapes(12, 4, 2), forward, (2, 5, 12),
                           call="CausalSelfAttention(12, 4, 2)(x)")
    for args, why in [((10, 4), "10 is not divisible by num_heads = 4"),
                      ((12, 4, 3), "num_heads = 4 is not divisible by num_kv_heads = 3")]:
        call = f"CausalSelfAttention{args}"
        try:
            student.CausalSelfAttention(*args)
        except StudentError as err:
            if err.type != "ValueError":
                raise Mismatch(f"{call} raised {err.type}; expected a ValueError: {why}") from None
            continue
        raise Mismatch(N_("{call} did not raise: {why}, so it must raise {error}").format(call=call, why=why,
                                                                                          error="ValueError"))


def check_at_once(student, reference, rng, b, t, d_model, h, h_kv):
    module, p = build(student, rng, d_model, h, h_kv)
    x = tensor(rng, b, t, d_model)
    call = f"CausalSelfAttention({d_model}, {h}, {h_kv})(x) with x of shape {(b, t, d_model)}"
    out, cache = unpack(module(x), call)
    expected, expected_cache = ref_run(reference, p, h, h_kv, x)
    expect_tensor(out, expected, call=call, mutants=Fingerprints(
        lambda **kw: fingerprints.causal_step(reference.CausalSelfAttention, p, x.double(), h=h, h_kv=h_kv, **kw)[0], run_variants(h, h_kv, d_model, False),
        depth=2))
    return module, p, x, cache, expected_cache, call


@exercise("CausalSelfAttention", points=2)
def test_whole_sequence_mha(student, reference, rng):
    """a whole sequence without cache matches the reference (num_kv_heads == num_heads)"""
    for b, t, d_model, h in [(2, 5, 8, 2), (3, 6, 24, 4), (1, 4, 12, 3)]:
        check_at_once(student, reference, rng, b, t, d_model, h, h)


@exercise("CausalSelfAttention", points=2)
def test_whole_sequence_gqa_mqa(student, reference, rng):
    """a whole sequence matches the reference with grouped-query (h_kv = 2, 3) and multi-query (h_kv = 1) attention"""
    for b, t, d_model, h, h_kv in [(2, 5, 24, 4, 2), (2, 6, 24, 6, 3), (3, 4, 12, 4, 1)]:
        check_at_once(student, reference, rng, b, t, d_model, h, h_kv)


@exercise("CausalSelfAttention", points=1)
def test_cache_returned(student, reference, rng):
    """the cache returned holds the keys and values (B, h_kv, T_past + T, d_k) of every token so far"""
    for b, t, d_model, h, h_kv in [(2, 5, 24, 4, 2), (1, 3, 8, 2, 2)]:
        _, p, x, cache, expected_cache, call = check_at_once(student, reference, rng, b, t, d_model, h, h_kv)
        expect_cache(cache, expected_cache, call, fingerprints=Fingerprints(
            lambda p=p, x=x, h=h, h_kv=h_kv, **kw: fingerprints.causal_step(reference.CausalSelfAttention, p, x.double(), h=h, h_kv=h_kv, **kw)[1],
            cache_variants(h, h_kv, False), depth=1))
    # with a cache given: it must come back with the new keys and values appended
    module, p = build(student, rng, 24, 4, 2)
    x = tensor(rng, 2, 6, 24)
    _, past = ref_run(reference, p, 4, 2, x[:, :4])
    past = tuple(c.float() for c in past)
    call = "CausalSelfAttention(24, 4, 2)(x, cache) with 2 new tokens after 4 cached ones"
    _, got_cache = unpack(module(x[:, 4:], past), call)
    _, expected_cache = ref_run(reference, p, 4, 2, x[:, 4:], past)
    expect_cache(got_cache, expected_cache, call, fingerprints=Fingerprints(
        lambda **kw: fingerprints.causal_step(reference.CausalSelfAttention, p, x[:, 4:].double(), tuple(c.double() for c in past), h=4, h_kv=2, **kw)[1],
        cache_variants(4, 2, True), depth=1))


def check_pieces(student, reference, rng, chunks, b, d_model, h, h_kv, what):
    """Feed a sequence piece by piece, passing the module's own cache back; compare with the whole."""
    module, p = build(student, rng, d_model, h, h_kv)
    t = sum(chunks)
    x = tensor(rng, b, t, d_model)
    expected, _ = ref_run(reference, p, h, h_kv, x)
    outputs, cache, start = [], None, 0
    call = f"CausalSelfAttention({d_model}, {h}, {h_kv}) run {what} (chunk sizes {list(chunks)}), its cache passed back"
    for n in chunks:
        out, cache = unpack(module(x[:, start:start + n], cache), call)
        if not isinstance(out, torch.Tensor):
            raise Mismatch(f"{call} returned {type(out).__name__} as its output; expected a tensor", mistake="wrong-type")
        if not (cache is None or (isinstance(cache, tuple) and len(cache) == 2)):
            raise Mismatch(f"{call} returned a {type(cache).__name__} as the cache; expected a tuple (k, v)",
                           mistake="wrong-type")
        outputs.append(out)
        start += n
    try:
        got = torch.cat(outputs, dim=1)
    except RuntimeError:
        raise Mismatch(f"{call}: the outputs of the pieces have shapes {[tuple(o.shape) for o in outputs]}; expected "
                       f"(B, piece length, d_model)", mistake="wrong-shape") from None
    expect_tensor(got, expected, call=call + ", outputs concatenated", mutants=Fingerprints(
        lambda **kw: fingerprints.causal_chunks(reference.CausalSelfAttention, p, x.double(), chunks, h=h, h_kv=h_kv, **kw)[0],
        run_variants(h, h_kv, d_model, True, chunks), depth=2))


@exercise("CausalSelfAttention", points=2)
def test_chunks_equal_whole(student, reference, rng):
    """running a sequence in chunks with the cache gives the same outputs as running it at once"""
    check_pieces(student, reference, rng, [3, 1, 2, 4], 2, 24, 4, 4, "in chunks")
    check_pieces(student, reference, rng, [2, 3, 2], 3, 24, 4, 2, "in chunks")


@exercise("CausalSelfAttention", points=1)
def test_token_by_token_equals_whole(student, reference, rng):
    """decoding token by token with the cache gives the same outputs as running the sequence at once"""
    check_pieces(student, reference, rng, [1] * 6, 2, 12, 3, 3, "token by token")
    check_pieces(student, reference, rng, [1] * 5, 1, 24, 4, 1, "token by token")


@exercise("CausalSelfAttention", points=1)
def test_new_tokens_after_given_cache(student, reference, rng):
    """new tokens after a given cache read all cached tokens and the new ones up to themselves"""
    for past_len, new_len, d_model, h, h_kv in [(4, 3, 24, 4, 2), (5, 1, 8, 2, 2)]:
        module, p = build(student, rng, d_model, h, h_kv)
        x = tensor(rng, 2, past_len + new_len, d_model)
        _, past = ref_run(reference, p, h, h_kv, x[:, :past_len])
        past32 = tuple(c.float() for c in past)
        call = (f"CausalSelfAttention({d_model}, {h}, {h_kv})(x, cache) with {new_len} new token(s) after "
                f"{past_len} cached ones")
        out, _ = unpack(module(x[:, past_len:], past32), call)
        past64 = tuple(c.double() for c in past32)
        expected, _ = ref_run(reference, p, h, h_kv, x[:, past_len:], past64)
        expect_tensor(out, expected, call=call, mutants=Fingerprints(
            lambda **kw: fingerprints.causal_step(reference.CausalSelfAttention, p, x[:, past_len:].double(), past64, h=h, h_kv=h_kv, **kw)[0],
            [v for v in run_variants(h, h_kv, d_model, True) if v.mistake != "cache-not-appended"], depth=2))
