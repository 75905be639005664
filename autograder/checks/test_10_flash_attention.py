"""Checks for lesson 10: combine_attention and flash_attention (NumPy).

Every answer is compared, output and lse, with the reference (float64, within 1e-10). The memory check
calls flash_attention once on about 2,000 queries and 6,000 keys under a memory limit: in the sandbox a
process of its own whose address space the kernel limits (Student.within_memory), which one (Lq, Lk)
float64 array exceeds; in a notebook's own kernel (the self-check) tracemalloc's peak stands in for it,
and the self-check says so. A second memory check calls it, without and with causal=True, on about 130
queries and 51,200 keys in blocks of 128, where one (128, Lk) array is over the same limit: a plain
softmax per block of queries is refused there, and so is the naive computation of the causal case.
The causal skip itself is taught, not graded (a loop that does not skip gives the same numbers); a
loop that stops at the wrong block loses keys, and the causal checks name or describe it.
"""
import re

import numpy as np

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import Fingerprints, Mismatch, Variant, all_of, describe_shape, exercise, expect_array

LESSON = "10_flash_attention"

TOL = (1e-10, 1e-10)          # the contract: float64 results within 1e-10 of the reference
MEMORY_LIMIT = 40 * 2**20     # bytes beyond what the process maps before the call
# (Lq, Lk) before the random part: one such float64 array is ~93 MiB, over twice the limit; the
# reference's tiles peak at ~0.2 MiB (tests/test_flash_memory_limit.py). Every array the limit must
# refuse is over 32 MiB, glibc's largest mmap threshold: a smaller one (a (1000, 3000) problem under
# 10 MiB was tried) can be served from heap the process freed and kept, which the limit does not see.
MEMORY_SHAPE = (2000, 6000)


def qkv(rng, batch, lq, lk, dk, dv, scale=1.0):
    return (rng.standard_normal(batch + (lq, dk)) * scale, rng.standard_normal(batch + (lk, dk)),
            rng.standard_normal(batch + (lk, dv)))


def pair(got, call):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        what = type(got).__name__ if not isinstance(got, (tuple, list)) else N_("{n} values").format(n=len(got))
        raise Mismatch(N_("{call} returned {returned}; expected a pair (output, lse)").format(call=call, returned=what),
                       mistake="wrong-type")
    return got


# ------------------------------------------------------------------------------ combine_attention

def combine_mutants(reference, parts, which, exp_weights="combine-linear-weights"):
    """exp_weights: the id of weights exp(lse_i) with no shared maximum; lse-unstable when the answer's lse
    overflows the same way (one mistake, exp without the maximum taken out, said once)."""
    found = [Variant.of("lse-unstable", "the lse is log(exp(lse1) + exp(lse2)), which overflows", lse="exp"),
             Variant.of("lse-unstable", "two empty sets (lse = -inf) give NaN", lse="nan-empty"),
             Variant.of("combine-linear-weights", "the outputs are weighted by lse1 / (lse1 + lse2) and "
                        "lse2 / (lse1 + lse2)", weights="lse"),
             Variant.of(None, "the outputs are weighted by exp(lse1 - m) and exp(lse2 - m), m the larger lse, and "
                        "not divided by their sum, so the weights add up to more than 1", weights="unnormalised"),
             Variant.of(exp_weights, "the outputs are weighted by exp(lse1) and exp(lse2) with no shared maximum "
                        "subtracted", weights="exp")]
    lse = np.concatenate([np.ravel(parts[1]), np.ravel(parts[3])])
    if not (np.abs(lse[np.isfinite(lse)]) > 700).any():   # exp(lse) is then finite, and those weights are right
        found.pop()   # (with empty sets they would look like the NaN of lse-unstable)
    return Fingerprints(lambda **kw: fingerprints.combine(reference.combine_attention, *parts, which=which, **kw),
                        found, depth=2)


def check_combine(student, reference, parts, *, what, signs=None):
    call = f"combine_attention(out1, lse1, out2, lse2) with {what}, out {describe_shape(parts[0])}"
    expected = quietly(reference.combine_attention, *parts)
    got = pair(student.combine_attention(*parts), call)
    exp_lse = fingerprints.combine(reference.combine_attention, *parts, which=1, lse="exp")
    same_overflow = _is_array(got[1]) and got[1].shape == exp_lse.shape and \
        not np.array_equal(exp_lse, expected[1], equal_nan=True) and np.allclose(got[1], exp_lse, equal_nan=True)
    exp_weights = "lse-unstable" if same_overflow else "combine-linear-weights"
    all_of(lambda: expect_array(got[1], expected[1], call=f"the lse from {call}", tol=TOL, inputs=parts,
                                mutants=combine_mutants(reference, parts, 1), signs=signs),
           lambda: expect_array(got[0], expected[0], call=f"the output of {call}", tol=TOL, inputs=parts,
                                mutants=combine_mutants(reference, parts, 0, exp_weights)))


def _is_array(x) -> bool:
    return isinstance(x, np.ndarray) and x.dtype.kind in "fiu"


def quietly(fn, *args, **kwargs):
    """The reference, called without NumPy's warnings (np.logaddexp(-inf, -inf) warns, and the answer
    is right): the grader's stderr is for what goes wrong, as in the self-check."""
    import warnings
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def split_partials(reference, rng, batch, lq, lk, dk, dv, scale=1.0):
    """(out1, lse1, out2, lse2): the reference's attention over two disjoint random sets of keys."""
    q, k, v = qkv(rng, batch, lq, lk, dk, dv, scale)
    keys = rng.permutation(lk)
    first, second = np.sort(keys[:lk // 3 + 1]), np.sort(keys[lk // 3 + 1:])
    a = quietly(reference.flash_attention, q, k[..., first, :], v[..., first, :], block_size=8)
    b = quietly(reference.flash_attention, q, k[..., second, :], v[..., second, :], block_size=8)
    return (a[0], a[1], b[0], b[1])


@exercise("combine_attention", points=1)
def test_combine_two_key_sets(student, reference, rng):
    """combine_attention merges attention over two disjoint key sets exactly (batches and heads)"""
    all_of(*[lambda shape=shape: check_combine(student, reference, split_partials(reference, rng, *shape),
                                               what="two random halves of the keys")
             for shape in [((), 4, 9, 8, 3), ((2, 3), 5, 20, 16, 4), ((3,), 1, 7, 4, 6)]])


@exercise("combine_attention", points=1)
def test_combine_large_lse(student, reference, rng):
    """combine_attention stays exact for lse of any magnitude (+-1e4)"""
    out1, lse1, out2, lse2 = split_partials(reference, rng, (2,), 8, 12, 8, 5, scale=3.0)
    # adding a constant to every score of a set moves its lse by that constant and leaves its output: each
    # query row gets its own pair of shifts, from 0 to +-1e4, so that only some of them overflow exp()
    shifts = np.array([(0, 0), (1e4, 1e4), (-1e4, -1e4), (1e4, -1e4), (-1e4, 1e4), (0, 1e4), (50, -50), (-1e4, 0)])
    jitter2 = rng.uniform(-2, 2, size=lse2.shape)
    parts = (out1, lse1 + shifts[:, 0], out2, lse2 + shifts[:, 1] + jitter2)
    check_combine(student, reference, parts, what="lse from -1e4 to +1e4",
                  signs={"lse-unstable": lambda got: not np.isfinite(got).all()})


@exercise("combine_attention", points=1)
def test_combine_empty_sets(student, reference, rng):
    """combine_attention: an empty set (lse = -inf) adds nothing; two give zero and -inf"""
    out1, lse1, out2, lse2 = split_partials(reference, rng, (), 6, 10, 4, 3)
    out1, lse1, out2, lse2 = out1.copy(), lse1.copy(), out2.copy(), lse2.copy()
    out1[[0, 2, 5]], lse1[[0, 2, 5]] = 0.0, -np.inf        # rows 0, 2, 5: the first set is empty
    out2[[1, 2, 4]], lse2[[1, 2, 4]] = 0.0, -np.inf        # rows 1, 2, 4: the second; row 2: both
    check_combine(student, reference, (out1, lse1, out2, lse2), what="empty sets in some rows (lse = -inf)")


# -------------------------------------------------------------------------------- flash_attention

def flash_mutants(reference, q, k, v, causal, block_size, which, seen=None):
    lq, lk = q.shape[-2], k.shape[-2]
    found = [Variant.of("running-sum-not-rescaled", "the running sum is not multiplied by exp(old max - new max) "
                        "when a block raises the maximum", rescale_sum=False),
             Variant.of("accumulator-not-rescaled", "the running output is not multiplied by exp(old max - new "
                        "max) when a block raises the maximum", rescale_output=False),
             Variant.of("normalised-per-block", "each block's softmax is normalised alone and the blocks' "
                        "outputs are added", per_block="sum"),
             Variant.of("normalised-per-block", "each block's softmax is normalised alone and the blocks' "
                        "outputs are averaged", per_block="mean"),
             Variant.of("lse-unstable", "the lse is log(sum(exp(score))) with no maximum taken out, which "
                        "overflows", lse="exp")]
    if causal and lq != lk:
        found.append(Variant.of("causal-top-left", N_("with {lq} queries and {lk} keys, query i sees keys j <= i "
                                                      "(aligned at the first key) instead of j <= i + Lk - Lq").format(
            lq=lq, lk=lk), top_left=True))
    if causal:
        found += nan_variants(lq, lk, block_size) + causal_skip_variants(lq, lk, block_size, seen)
    if lk % block_size and lk > block_size:      # (with no full block, every key would be dropped)
        found.append(Variant.of("last-block-dropped", N_("the last {n} of the {lk} keys (past the last full block of "
                                                         "{block_size}) are ignored").format(
            n=lk % block_size, lk=lk, block_size=block_size), drop_keys=True))
    if lq % block_size and lq > block_size:
        found.append(Variant.of("last-block-dropped", N_("the last {n} of the {lq} queries (past the last full block "
                                                         "of {block_size}) get no output").format(
            n=lq % block_size, lq=lq, block_size=block_size), drop_queries=True))
    return Fingerprints(lambda **kw: fingerprints.flash(reference.flash_attention, q, k, v, causal, block_size,
                                                        which=which, **kw), found, depth=2)


def check_flash(student, reference, q, k, v, causal=False, block_size=None, signs=None, seen=None):
    args = {} if not causal else {"causal": True}
    if block_size is not None:
        args["block_size"] = block_size
    used = block_size or 64
    call = (f"flash_attention(q, k, v{''.join(f', {n}={x}' for n, x in args.items())}) with q, k, v "
            f"{describe_shape(q, k, v)}")
    expected = quietly(reference.flash_attention, q, k, v, causal=causal, block_size=used)
    got = pair(student.flash_attention(q, k, v, **args), call)
    all_of(lambda: expect_array(got[1], expected[1], call=f"the lse from {call}", tol=TOL, inputs=(q, k, v),
                                mutants=flash_mutants(reference, q, k, v, causal, used, 1, seen),
                                signs=signs),
           lambda: expect_array(got[0], expected[0], call=f"the output of {call}", tol=TOL, inputs=(q, k, v),
                                mutants=flash_mutants(reference, q, k, v, causal, used, 0, seen)))


# the wrong stops of the causal loop over key blocks (fingerprints.flash's skip=...), in words
SKIPS = {"off-by-one": ("causal-off-by-one", N_("the loop over key blocks also stops at a block whose first key is "
                                                 "the query block's last visible key (i1 - 1 + Lk - Lq), so that key "
                                                 "is lost")),
         "first-query": (None, N_("the loop over key blocks stops after the block holding the query block's first "
                                  "query's last key (i0 + Lk - Lq): the later queries of the block lose keys they may "
                                  "attend")),
         "no-offset": (None, N_("the loop over key blocks stops after key i1 - 1, the query block's own last index, "
                                "without the + Lk - Lq of the causal alignment"))}
SKIP_TOO_EARLY = N_("the loop over key blocks stops too early: a block the query block's last query may attend (its "
                    "first key is at most i1 - 1 + Lk - Lq) is not computed")


def nan_variants(lq, lk, block_size):
    """Causal rows left NaN by a missing guard: every row with no key (queries all at once), those in a
    query block that computes a tile (an unguarded running maximum), or every row that meets a tile
    with no visible key (an unguarded tile maximum). Rule sets that pick the same rows are one variant."""
    no_key = np.arange(lq) + lk - lq < 0
    variants, rows_seen = [], []
    for rows, detail, switch in [
            (no_key, N_("the queries with no key come out NaN"), {"lse": "nan-empty"}),
            (fingerprints.flash_nan_rows(lq, lk, block_size, "no-key"), N_("the queries with no key come out NaN"),
             {"nan": "no-key"}),
            (fingerprints.flash_nan_rows(lq, lk, block_size, "tile"), N_("a row whose keys in one tile are all masked "
             "(on the diagonal, or a row with no key) comes out NaN: the tile's maximum is -inf, and "
             "exp(-inf - (-inf)) is NaN"), {"nan": "tile"})]:
        if rows.any() and not any(np.array_equal(rows, r) for r in rows_seen):
            rows_seen.append(rows)
            variants.append(Variant.of("masked-row-nan", detail, **switch))
    return variants


def causal_skip_variants(lq, lk, block_size, seen=None):
    """A causal loop over key blocks that stops at the wrong block (the right stop: the first block whose first key j0 is past
    the query block's last visible key, j0 > i1 - 1 + Lk - Lq). Wrong stops that lose the same keys here
    give the same answer: `seen` (the stops earlier cases of the check told apart) says which it is;
    without it (None), the loss is described, not named. Stopping at j0 >= i1 - 1 + Lk - Lq is never
    alone: only cases where the others are told apart name it."""
    found, groups = [], {}
    for rule in SKIPS:
        lost = fingerprints.flash_skip_losses(lq, lk, block_size, rule)
        if lost:                                     # (no loss: the right answer here)
            groups.setdefault(lost, []).append(rule)
    for rules in groups.values():
        if len(rules) > 1 and seen is not None:
            rules = [r for r in rules if r in seen] or [r for r in rules if r == "off-by-one"]
        if len(rules) == 1:
            found.append(Variant.of(*SKIPS[rules[0]], skip=rules[0]))
        else:
            found.append(Variant.of(None, SKIP_TOO_EARLY, skip=rules[0]))
    return found


def jitter(rng, n):
    return n + int(rng.integers(1, 9))     # never a multiple of the block sizes used below


@exercise("flash_attention", points=1)
def test_flash_one_sequence(student, reference, rng):
    """flash_attention equals attention (Lq != Lk, lengths not multiples of block_size)"""
    all_of(*[lambda lq=lq, lk=lk, dk=dk, dv=dv, bs=bs: check_flash(student, reference, *qkv(rng, (), lq, lk, dk, dv),
                                                                   block_size=bs)
             for lq, lk, dk, dv, bs in [(jitter(rng, 32), jitter(rng, 96), 8, 5, 16),
                                        (jitter(rng, 64), jitter(rng, 24), 16, 4, 8),
                                        (3, jitter(rng, 128), 4, 6, None)]])


@exercise("flash_attention", points=1)
def test_flash_batches_and_heads(student, reference, rng):
    """flash_attention works over batches and heads (default block_size), and broadcasts them"""
    all_of(*[lambda b=b, lq=lq, lk=lk: check_flash(student, reference, *qkv(rng, b, lq, lk, 16, 8))
             for b, lq, lk in [((2, 3), jitter(rng, 64), jitter(rng, 128)), ((3,), jitter(rng, 128), jitter(rng, 64))]],
           lambda: check_flash(student, reference, *broadcast_qkv(rng, jitter(rng, 16), jitter(rng, 40)), block_size=16))


def broadcast_qkv(rng, lq, lk):
    """q (2, 3, Lq, 8), k (1, 3, Lk, 8), v (3, Lk, 4): keys and values shared across the first axis."""
    return (rng.standard_normal((2, 3, lq, 8)), rng.standard_normal((1, 3, lk, 8)), rng.standard_normal((3, lk, 4)))


@exercise("flash_attention", points=1)
def test_flash_causal_fewer_queries(student, reference, rng):
    """causal flash_attention aligns the last query with the last key (Lq <= Lk)"""
    same = jitter(rng, 48)
    n = 8 * int(rng.integers(2, 6))
    # (16, 28, 8) first: each wrong stop of the loop over key blocks loses other keys there (or none).
    # (16, 17, 8) and (n, n + 9, 8): a key block that is not the last starts exactly at a query block's
    # last visible key; stopping there, after the first query's last key, or (the first) at i1 - 1 drops
    # it alike, and what the earlier cases found says which (with one query block, the block dropped
    # would be the last, one key long: last-block-dropped's look)
    cases = [(16, 28, 8), (jitter(rng, 16), jitter(rng, 64), 16), (same, same, 16), (1, jitter(rng, 40), 8),
             (16, 17, 8), (n, n + 9, 8)]
    seen: set[str] = set()

    def case(lq, lk, bs):
        try:
            check_flash(student, reference, *qkv(rng, (2,), lq, lk, 8, 4), causal=True, block_size=bs, seen=seen)
        except Mismatch as err:
            said = set(err.extra) | {detail for _, detail in err.found}
            seen.update(rule for rule, (_, words) in SKIPS.items() if any(words in d for d in said if d))
            raise
    all_of(*[lambda c=c: case(*c) for c in cases])


@exercise("flash_attention", points=1)
def test_flash_rows_without_keys(student, reference, rng):
    """causal flash_attention with more queries than keys (Lq > Lk; rows with no key: zero, lse = -inf)"""
    all_of(*[lambda lq=lq, lk=lk: check_flash(student, reference, *qkv(rng, (), lq, lk, 8, 4), causal=True, block_size=16)
             for lq, lk in [(jitter(rng, 48), jitter(rng, 16)), (jitter(rng, 32), 5)]])


@exercise("flash_attention", points=1)
def test_flash_large_scores(student, reference, rng):
    """flash_attention stays finite and exact for large scores (lse up to ~1e3)"""
    q, k, v = qkv(rng, (2,), jitter(rng, 24), jitter(rng, 72), 8, 4, scale=400.0)   # scores ~ +-1e3
    order = np.argsort((q[..., :1, :] @ np.swapaxes(k, -1, -2))[..., 0, :], axis=-1)
    k = np.take_along_axis(k, order[..., None], axis=-2)      # scores rise from block to block: the max moves
    check_flash(student, reference, q, k, v, block_size=16,
                signs={"lse-unstable": lambda got: not np.isfinite(got).all()})


def memory_inputs(rng):
    lq, lk = (n + int(rng.integers(1, 64)) for n in MEMORY_SHAPE)
    return qkv(rng, (), lq, lk, 16, 8)


ALLOCATES = N_("it allocates an array of shape {shape}")
PEAK = N_("{call} allocated {peak} at its peak, as tracemalloc measured it in this kernel: more than the {limit} the "
          "grader allows ({arrays}). The grader enforces the limit in a process of its own; this figure only tells you "
          "where you stand")


def _mib(n) -> str:
    return f"{n / 2**20:.1f} MiB"


@exercise("flash_attention", points=1)
def test_flash_memory_limit(student, reference, rng):
    """flash_attention runs within a memory limit that one (Lq, Lk) array exceeds"""
    q, k, v = memory_inputs(rng)
    lq, lk = q.shape[-2], k.shape[-2]
    full = lq * lk * 8
    call = f"flash_attention(q, k, v) with q, k, v {describe_shape(q, k, v)}"
    ran = student.flash_attention.within_memory(q, k, v, memory_bytes=MEMORY_LIMIT)
    if "refused" in ran:
        said = ran["refused"]
        shape = re.search(r"shape \(([\d, ]+)\)", said)
        dims = tuple(int(d) for d in shape.group(1).replace(" ", "").split(",") if d) if shape else ()
        line = N_("{call} ran out of memory under a limit of {limit} ({arrays}): {reason}").format(
            call=call, limit=_mib(MEMORY_LIMIT), arrays=N_("one {shape} float64 array is {mib}").format(
                shape=(lq, lk), mib=_mib(full)), reason=said)
        if dims[-2:] == (lq, lk):
            raise Mismatch(line, found=[("materialises-scores", ALLOCATES.format(shape=dims))])
        raise Mismatch(line)
    peak = ran.get("peak")
    if not ran["enforced"] and isinstance(peak, int) and peak > MEMORY_LIMIT:
        line = PEAK.format(call=call, peak=_mib(peak), limit=_mib(MEMORY_LIMIT),
                           arrays=N_("one {shape} float64 array is {mib}").format(shape=(lq, lk), mib=_mib(full)))
        if peak >= full:
            raise Mismatch(line, found=[("materialises-scores", N_("its peak, {peak}, is at least one {shape} float64 "
                                                                   "array").format(peak=_mib(peak), shape=(lq, lk)))])
        raise Mismatch(line)
    expected = reference.flash_attention(q, k, v)
    got = pair(ran["result"], call)
    all_of(lambda: expect_array(got[1], expected[1], call=f"the lse from {call}", tol=TOL, inputs=(q, k, v)),
           lambda: expect_array(got[0], expected[0], call=f"the output of {call}", tol=TOL, inputs=(q, k, v)))


# Few queries and many keys, in blocks of 128: one (128, Lk) float64 array is 1.25 times the limit, so
# a block of queries against every key (a plain softmax per query block) is refused, and so is the
# naive computation of the causal case; a (128, 128) tile is 128 KiB. The time goes with Lq * Lk, which
# the limit fixes to about 1.25 * limit / 8 per query block: a second block of at most 16 queries
# (~0.6 s a call on a loaded 2-core machine, ~2 s under the self-check's tracemalloc).
NARROW_BLOCK = 128
NARROW_KEYS = -(-5 * MEMORY_LIMIT // (4 * NARROW_BLOCK * 8))


def narrow_inputs(rng):
    lq, lk = NARROW_BLOCK + int(rng.integers(1, 17)), NARROW_KEYS + int(rng.integers(1, 64))
    return qkv(rng, (), lq, lk, 8, 4)


def _refused_shape(said: str) -> tuple:
    shape = re.search(r"shape \(([\d, ]+)\)", said)
    return tuple(int(d) for d in shape.group(1).replace(" ", "").split(",") if d) if shape else ()


def check_within_limit(student, reference, q, k, v, causal):
    lq, lk, b = q.shape[-2], k.shape[-2], NARROW_BLOCK
    call = (f"flash_attention(q, k, v, {'causal=True' if causal else 'causal=False'}, block_size={b}) with q, k, v "
            f"{describe_shape(q, k, v)}")
    sizes = N_("one {shape} float64 array is {mib}, one {block} array {block_mib}, a {tile} tile {tile_mib}").format(
        shape=(lq, lk), mib=_mib(lq * lk * 8), block=(b, lk), block_mib=_mib(b * lk * 8), tile=(b, b),
        tile_mib=_mib(b * b * 8))
    ran = student.flash_attention.within_memory(q, k, v, causal, b, memory_bytes=MEMORY_LIMIT)
    if "refused" in ran:
        dims = _refused_shape(ran["refused"])
        line = N_("{call} ran out of memory under a limit of {limit} ({arrays}): {reason}").format(
            call=call, limit=_mib(MEMORY_LIMIT), arrays=sizes, reason=ran["refused"])
        if dims[-2:] == (lq, lk):
            raise Mismatch(line, found=[("materialises-scores", ALLOCATES.format(shape=dims))])
        if dims[-1:] == (lk,):
            raise Mismatch(line, extra=[N_("it allocates an array of shape {shape}: a block of queries against every "
                                           "key, which grows with Lk, where a tile of (block_size, block_size) fits")
                                        .format(shape=dims)])
        raise Mismatch(line)
    peak = ran.get("peak")
    if not ran["enforced"] and isinstance(peak, int) and peak > MEMORY_LIMIT:
        raise Mismatch(PEAK.format(call=call, peak=_mib(peak), limit=_mib(MEMORY_LIMIT), arrays=sizes))
    expected = quietly(reference.flash_attention, q, k, v, causal, b)
    got = pair(ran["result"], call)
    all_of(lambda: expect_array(got[1], expected[1], call=f"the lse from {call}", tol=TOL, inputs=(q, k, v)),
           lambda: expect_array(got[0], expected[0], call=f"the output of {call}", tol=TOL, inputs=(q, k, v)))


@exercise("flash_attention", points=1)
def test_flash_memory_few_queries(student, reference, rng):
    """flash_attention's memory does not grow with Lk (few queries, many keys, causal and not)"""
    q, k, v = narrow_inputs(rng)
    all_of(lambda: check_within_limit(student, reference, q, k, v, False),
           lambda: check_within_limit(student, reference, q, k, v, True))
