"""Checks for lesson 09: apply_rope, next_token_probs and generate (PyTorch).

generate is graded on a small model of the checks' own (generation_subjects.py), built in the
student's process from source, never on the lesson's TinyGPT: grading never trains anything.
Every generate verdict compares what the student's code returned (the tokens, and what the model
answers afterwards) with what the grader computes itself: how the model was called (the prompt
once, then one token at a time with the cache), eval mode and no gradients show in the tokens of
a model whose logits depend on them. The model's log of its calls lives in the student's process,
where a submission can rewrite it: it only describes a failure, never decides one.
"""
import numpy as np
import torch

from autograder.diagnose import fingerprints
from autograder.grading.checking import Fingerprints, Mismatch, Variant, all_of, exercise, expect_tensor
from autograder.checks import generation_subjects as subjects
from autograder.i18n import N_
from autograder.run.errors import StudentError
from autograder.run.wire import ClassSource

LESSON = "09_generating_text"


def tensor(rng, *shape, dtype=np.float32):
    return torch.from_numpy(rng.standard_normal(shape).astype(dtype))


def expect_error(call_thunk, call: str, why: str, kind: str = "ValueError"):
    try:
        call_thunk()
    except StudentError as err:
        if err.type == "NotImplementedError":   # the stub: not-implemented, like every other check
            raise
        if err.type != kind:
            raise Mismatch(N_("{call} raised {error}: {message}; expected a {kind}: {why}").format(
                call=call, error=err.type, message=err.message, kind=kind, why=why)) from None
        return
    raise Mismatch(N_("{call} did not raise: {why}, so it must raise {error}").format(call=call, why=why, error=kind))


# ------------------------------------------------------------------------ apply_rope

def rope_mutants(apply_rope, x, positions, base=10000.0):
    return Fingerprints(lambda **kw: fingerprints.rope(apply_rope, x, positions, base, **kw), [
        Variant.of("rope-interleaved", "features are paired (2i, 2i + 1), the GPT-J layout, instead of "
                   "(i, i + d/2)", layout="interleaved"),
        Variant.of("rope-wrong-frequency", "pair i turns by base^(-i/d) instead of base^(-2i/d)", freq="i"),
        Variant.of("rope-wrong-frequency", "pair i turns by base^(-2i/(d/2)): arange(0, d, 2) divided by d/2 "
                   "instead of d", freq="4i"),
        Variant.of("rope-wrong-frequency", "pair i turns by base^(+2i/d) instead of base^(-2i/d)", freq="inverse"),
        Variant.of("rope-positions-ignored", "rows are rotated by 0..T-1 whatever `positions` says",
                   positions_used=False),
        Variant.of("rope-sign-flipped", "the rotation goes the other way (the signs of the sin terms are swapped)",
                   direction=-1)],
        depth=2)


def check_rope(student, reference, x, positions, base=None, what=""):
    args = (x, positions) if base is None else (x, positions, base)
    call = (f"apply_rope(x, positions{'' if base is None else f', base={base}'}) with x of shape {tuple(x.shape)} "
            f"{str(x.dtype).replace('torch.', '')}{what}")
    got = student.apply_rope(*args)
    expected = reference.apply_rope(x.double(), positions, *(() if base is None else (base,)))
    expect_tensor(got, expected, call=call,
                  mutants=rope_mutants(reference.apply_rope, x, positions, 10000.0 if base is None else base))
    return got


@exercise("apply_rope", points=2)
def test_rope_matches_reference(student, reference, rng):
    """apply_rope matches the reference for positions 0..T-1 (several shapes, and another base)"""
    for shape in [(5, 8), (2, 6, 4), (2, 3, 7, 16)]:
        x = tensor(rng, *shape)
        check_rope(student, reference, x, torch.arange(shape[-2]), what=", positions 0..T-1")
    x = tensor(rng, 2, 5, 12)
    base = float(rng.choice([100.0, 500.0]))
    check_rope(student, reference, x, torch.arange(5), base=base, what=", positions 0..T-1")


@exercise("apply_rope", points=1)
def test_rope_positions_not_from_zero(student, reference, rng):
    """apply_rope rotates each row by its own absolute position (positions that do not start at 0)"""
    t, d = int(rng.integers(3, 6)), 2 * int(rng.integers(3, 7))
    past = int(rng.integers(3, 20))
    x = tensor(rng, 2, 3, t, d)
    check_rope(student, reference, x, torch.arange(past, past + t), what=f", positions {past}..{past + t - 1} "
               f"(a cache of {past} tokens before them)")
    positions = torch.from_numpy(np.sort(rng.choice(40, size=t, replace=False)).astype(np.int64))
    check_rope(student, reference, x, positions, what=f", positions {positions.tolist()}")
    one = tensor(rng, 2, 3, 1, d)
    check_rope(student, reference, one, torch.tensor([past]), what=f", one row at position {past} (a decoding step)")


@exercise("apply_rope", points=1)
def test_rope_keeps_shape_and_dtype(student, reference, rng):
    """apply_rope keeps x's shape and dtype (float32 and float64), with the reference's values"""
    for dtype, np_dtype in ((torch.float64, np.float64), (torch.float32, np.float32)):
        x = tensor(rng, 2, 4, 6, dtype=np_dtype)
        got = check_rope(student, reference, x, torch.arange(2, 6), what=", positions 2..5")
        if got.dtype != dtype:
            raise Mismatch(N_("apply_rope(x, positions) with x of dtype {dtype} returned dtype {got}; the result "
                              "must keep x's dtype").format(dtype=str(dtype).replace('torch.', ''),
                                                            got=str(got.dtype).replace('torch.', '')),
                           mistake="wrong-type")


@exercise("apply_rope", points=1)
def test_rope_odd_size_raises(student, reference, rng):
    """apply_rope raises ValueError for an odd number of features, and rotates even ones"""
    d = 2 * int(rng.integers(1, 5)) + 1
    x = tensor(rng, 2, 3, d)
    expect_error(lambda: student.apply_rope(x, torch.arange(3)), f"apply_rope(x, positions) with x of shape "
                 f"{tuple(x.shape)}", N_("d = {n} is odd, so the features cannot be paired").format(n=d))
    check_rope(student, reference, tensor(rng, 2, 3, d + 1), torch.arange(1, 4), what=", positions 1..3")


# ------------------------------------------------------------------------ next_token_probs

def probs_mutants(next_token_probs, logits, temperature, top_k, top_p):
    found = [
        Variant.of("temperature-after-softmax", "the probabilities are divided by the temperature after the "
                   "softmax (which the renormalisation then undoes), instead of the logits before it",
                   temperature_on="probs"),
        Variant.of("not-renormalised", "the kept probabilities are not divided by their sum", renormalise=False)]
    if isinstance(top_p, float):
        found += [
            Variant.of("top-p-drops-threshold-token", "a token is kept only while the running total *including* "
                       "it is below top_p, so the token that crosses top_p is dropped", top_p_rule="inclusive"),
            Variant.of("top-p-drops-threshold-token", "a token is kept only while the running total *including* "
                       "it is below top_p, so the token that crosses top_p is dropped", top_p_rule="inclusive",
                       top_p_empty="first"),
            Variant.of("top-p-tie-order", "tokens of equal probability are taken higher index first (an ascending "
                       "sort, then the end of it)", top_p_order="reversed")]
    # after the crossing token dropped: above 1 both keep fewer tokens, and where one answer fits both, dropping
    # the token is the simpler explanation (not with top_k: top-p chosen before top-k can look the same there)
    if isinstance(top_p, float) and temperature != 1.0 and top_k is None:
        found += [Variant.of("top-p-before-temperature", N_("the top-p set is the one of the logits before the "
                                                            "division by temperature={temperature}").format(
            temperature=f"{temperature:g}"), top_p_on="raw")]
    if isinstance(top_k, int):
        found += [
            Variant.of("top-k-ties-dropped", "exactly k tokens are kept, so tokens that tie with the k-th largest "
                       "logit are removed", top_k_ties="drop"),
            Variant.of("top-k-ties-dropped", "exactly k tokens are kept, so tokens that tie with the k-th largest "
                       "logit are removed", top_k_ties="sort"),
            Variant.of("top-k-ties-dropped", "exactly k tokens are kept, so tokens that tie with the k-th largest "
                       "logit are removed", top_k_ties="argsort"),
            # what the answer equals, never how the code got there: top-p before top-k (OpenNMT), top-p
            # alone when both are given (fairseq) and a top-k on the probabilities all give it
            Variant.of(None, N_("with top_k={top_k} and top_p={top_p} together, the answer equals the top-p set "
                                "chosen from the probabilities of all the tokens, limited to the top k, where the "
                                "reference chooses it from the top k tokens' renormalised probabilities").format(
                top_k=top_k, top_p=f"{top_p:.4g}"), top_k_on="probs")
            if top_p is not None else
            Variant.of(None, "the top k tokens keep the probabilities of the softmax over all the tokens",
                       top_k_on="probs"),
            Variant.of(None, "top_k keeps one token too many: the threshold is the (k + 1)-th largest logit, "
                       "not the k-th", top_k_bound="next"),
            Variant.of(None, "top_k keeps only the logits above the k-th largest, so the k-th itself and its ties "
                       "are removed (`logits <= kth` is masked where `logits < kth` is meant)", top_k_bound="above")]
    # three at once only with top_k (SGLang: exactly k kept, of the softmax over all tokens, not renormalised)
    return Fingerprints(lambda **kw: fingerprints.sample_probs(next_token_probs, logits, temperature, top_k, top_p, **kw), found,
                        depth=3 if isinstance(top_k, int) else 2)


def describe_knobs(temperature, top_k, top_p):
    parts = [f"temperature={temperature:g}"] if temperature != 1.0 else []
    parts += [f"top_k={top_k}"] if top_k is not None else []
    parts += [f"top_p={top_p:.4g}"] if top_p is not None else []
    return ", ".join(parts)


def check_probs(student, reference, logits, temperature=1.0, top_k=None, top_p=None, what="", exact=False):
    knobs = describe_knobs(temperature, top_k, top_p)
    call = f"next_token_probs(logits{', ' + knobs if knobs else ''}) with logits of shape {tuple(logits.shape)}{what}"
    got = student.next_token_probs(logits, temperature, top_k, top_p)
    expected = reference.next_token_probs(logits.double(), temperature, top_k, top_p)
    expect_tensor(got, expected, call=call, mutants=probs_mutants(reference.next_token_probs, logits, temperature, top_k, top_p))
    if exact:
        removed = expected == 0
        if bool((got[removed] != 0).any()):
            raise Mismatch(N_("{call}: removed tokens must have probability exactly 0; some are {values}").format(
                call=call, values=got[removed][got[removed] != 0][:3].tolist()))
        sums = got.double().sum(-1)
        if bool(((sums - 1).abs() > 1e-6).any()):
            raise Mismatch(N_("{call}: the probabilities sum to {values}; they must sum to 1").format(
                call=call, values=sums.flatten()[:4].tolist()), mistake="not-renormalised")
    return got


def cutoff_between(probs_row, rank, rng):
    """A top_p strictly between the total of the `rank` most likely tokens and that of `rank + 1`, well
    away from both (so float32 rounding cannot change which tokens are kept)."""
    totals = np.cumsum(np.sort(probs_row.double().numpy())[::-1])
    low, high = (totals[rank - 1] if rank > 0 else 0.0), totals[rank]
    return float(low + (high - low) * rng.uniform(0.3, 0.7))


@exercise("next_token_probs", points=1)
def test_probs_temperature(student, reference, rng):
    """temperature divides the logits before the softmax (batches of logits, no top-k or top-p)"""
    logits = tensor(rng, 3, 9) * 2
    for temperature in (1.0, float(rng.uniform(0.3, 0.7)), float(rng.uniform(1.5, 3.0))):
        check_probs(student, reference, logits, temperature)


@exercise("next_token_probs", points=1)
def test_probs_top_k(student, reference, rng):
    """top_k keeps the logits not below the k-th largest (ties kept); top_k >= V keeps everything"""
    logits = torch.from_numpy(rng.integers(0, 4, size=(4, 10)).astype(np.float32))   # many ties
    for k in (1, 3, int(rng.integers(4, 7))):
        check_probs(student, reference, logits, top_k=k, what=" (integer logits, so some tie with the k-th)",
                    exact=True)
    distinct = tensor(rng, 2, 8)
    check_probs(student, reference, distinct, top_k=2, exact=True)
    check_probs(student, reference, distinct, top_k=8, what=" (k = V)", exact=True)
    check_probs(student, reference, distinct, top_k=20, what=" (k > V)", exact=True)


@exercise("next_token_probs", points=2)
def test_probs_top_p_threshold(student, reference, rng):
    """top_p keeps the smallest set of most likely tokens that reaches top_p (the crossing token kept)"""
    logits = tensor(rng, 12) * 1.5
    probs = torch.softmax(logits.double(), -1)
    for rank in (1, 2, int(rng.integers(3, 7))):
        top_p = cutoff_between(probs, rank, rng)
        check_probs(student, reference, logits, top_p=top_p, exact=True,
                    what=f" (the {rank} most likely tokens hold less than top_p, {rank + 1} hold more)")
    check_probs(student, reference, logits, top_p=1.0, exact=True, what=" (top_p = 1 keeps every token)")
    batch = tensor(rng, 3, 7)
    top_p = float(rng.uniform(0.55, 0.85))
    totals = np.sort(torch.softmax(batch.double(), -1).numpy(), axis=-1)[:, ::-1].cumsum(-1)
    while np.abs(totals - top_p).min() < 1e-3:                 # away from every running total
        top_p = float(rng.uniform(0.55, 0.85))
    check_probs(student, reference, batch, top_p=top_p, exact=True, what=" (a batch of 3 rows)")


@exercise("next_token_probs", points=1)
def test_probs_top_p_ties(student, reference, rng):
    """top_p takes tokens of equal probability lower index first"""
    v = 8
    values = np.array([2.0, 1.0, 1.0, 1.0, 0.5, 0.0, -1.0, -1.0], dtype=np.float32)
    logits = torch.from_numpy(values[rng.permutation(v)].copy())
    p_top, p_tie = np.exp(2.0), np.exp(1.0)
    total = np.exp(values.astype(np.float64)).sum()
    top_p = float((p_top + 1.5 * p_tie) / total)               # the threshold falls inside the three-way tie
    check_probs(student, reference, logits, top_p=top_p, exact=True,
                what=f" = {[round(x, 1) for x in logits.tolist()]} (three tokens tie, and top_p falls among them)")


@exercise("next_token_probs", points=2)
def test_probs_combined_and_batched(student, reference, rng):
    """temperature, top_k and top_p together on logits with two batch axes: sums to 1, removed tokens exactly 0"""
    logits = tensor(rng, 2, 3, 10) * 2
    # a call that fails with nothing named does not end the check: a top-k the code ignores must not hide a
    # top-p mistake (RWKV has no top-k); one that names a mistake does, as before
    calls = [(float(rng.uniform(0.6, 0.9)), 6, None)]
    # below 1, top-p chosen before the temperature keeps more tokens and dropping the crossing token fewer, so
    # these two never give the same answer; above 1 both keep fewer (and the two together do not cancel out)
    for low, high in ((0.4, 0.7), (1.2, 2.0)):
        temperature = float(rng.uniform(low, high))
        scaled = torch.softmax(logits.double() / temperature, -1).numpy()
        top_p = float(rng.uniform(0.5, 0.8))
        while np.abs(np.sort(scaled, -1)[..., ::-1].cumsum(-1) - top_p).min() < 1e-3:
            top_p = float(rng.uniform(0.5, 0.8))
        calls.append((temperature, None, top_p))
    # top_k then top_p: the running totals of the top-k distribution decide
    k = 5
    kth = torch.topk(logits.double() / 0.8, k, dim=-1).values[..., -1:]
    masked = torch.softmax((logits.double() / 0.8).masked_fill(logits.double() / 0.8 < kth, float("-inf")), -1)
    full = np.sort(torch.softmax(logits.double() / 0.8, -1).numpy(), -1)[..., ::-1]
    masked = np.sort(masked.numpy(), -1)[..., ::-1]

    def kept(sorted_probs, p):         # how many tokens top-p keeps from probabilities sorted in decreasing order
        return ((sorted_probs.cumsum(-1) - sorted_probs) < p).sum(-1)

    # a top_p away from every running total, for which top-p chosen over all the tokens, then limited to the
    # top k, keeps other tokens than top-p over the top k alone (top-p before top-k, or top-k skipped)
    for _ in range(50):
        top_p = float(rng.uniform(0.5, 0.8))
        if np.abs(masked.cumsum(-1) - top_p).min() >= 1e-3 and np.abs(full.cumsum(-1) - top_p).min() >= 1e-3 \
                and (np.minimum(kept(full, top_p), k) != kept(masked, top_p)).any():
            break
    calls.append((0.8, k, top_p))
    stopped = []        # a call that named a mistake (or raised) ends the check, as a failing call used to

    def judge(knobs):
        if not stopped:
            try:
                check_probs(student, reference, logits, *knobs, exact=True)
            except Mismatch as err:
                stopped.extend([err] if err.found else [])
                raise
            except StudentError:
                stopped.append(None)
                raise
    all_of(*[lambda c=c: judge(c) for c in calls])


@exercise("next_token_probs", points=1)
def test_probs_temperature_must_be_positive(student, reference, rng):
    """next_token_probs raises ValueError unless temperature > 0, and works for temperature > 0"""
    logits = tensor(rng, 2, 6)
    for temperature in (0.0, -1.0):
        expect_error(lambda t=temperature: student.next_token_probs(logits, t),
                     f"next_token_probs(logits, temperature={temperature:g})", N_("the temperature must be > 0"))
    check_probs(student, reference, logits, float(rng.uniform(0.5, 2.0)))


# ------------------------------------------------------------------------ generate

def call_keeping_args(student, name, args, kwargs):
    """Call the student's function and return (result, the arguments as they are after the call):
    the course model built in the student's process comes back as a handle the checks can call."""
    from autograder.grading.student import ExerciseUnavailable, _unwrap, _wrap
    submission = student._submission
    try:
        reply = submission.request("call", target=["name", name], args=_unwrap(list(args)),
                                   kwargs=_unwrap(dict(kwargs)), return_args=True)
    except StudentError as err:
        if err.type == "NameError" and f"'{name}'" in err.message:
            why = submission.why_missing(name)
            raise ExerciseUnavailable(why or f"{name} is not defined in your notebook") from None
        raise
    return _wrap(submission, reply["result"]), _wrap(submission, reply["args"])


class Run:
    """One generate call on a course model (generation_subjects.py). Every verdict is the tokens it
    returned against tokens the grader computes itself; the model's own log of its calls, kept in
    the student's process, only describes a failure the tokens decided (`log_hint`).

    cache_term: the model's logits depend on the length of the cache each call gets, so only the
        prompt once, then one token at a time with the last cache, gives the expected tokens (the
        seed is redrawn until recomputation, the whole sequence with the cache, a dropped and a
        stale cache all give other tokens). grad_term: they depend on whether gradients are on."""

    CACHE_MISTAKES = (("recompute", "cache-not-used", N_("the whole sequence is given to the model at every step "
                                                         "without the cache, so every step recomputes the text so far")),
                      ("whole", "prompt-fed-again", N_("the whole sequence so far is given to the model at every step "
                                                       "together with the cache")),
                      ("dropped", "cache-dropped", N_("each new token is given to the model alone without the cache")),
                      ("stale", None, N_("each new token is given with the prompt's cache instead of the cache the "
                                         "previous call returned")))

    def __init__(self, student, reference, rng, *, b=3, t0=None, new=None, temperature=0.0, top_k=None, top_p=None,
                 sampled=False, training=True, cache_term=False, grad_term=False):
        self.student, self.sampled, self.training = student, sampled, training
        self.generate = reference.generate          # what the fingerprints run, changed
        self.cache_term, self.grad_term = cache_term, grad_term
        self.vocab = int(rng.integers(7, 12))
        t0 = int(rng.integers(2, 5)) if t0 is None else t0
        self.new = int(rng.integers(5, 8)) if new is None else new
        self.prompt = torch.from_numpy(rng.integers(0, self.vocab, size=(b, t0)).astype(np.int64))
        self.options = dict(temperature=temperature, top_k=top_k, top_p=top_p)
        self.draw_seed = int(rng.integers(1, 2**31 - 1)) if sampled else None
        for _ in range(20):    # a model on which every way of misusing the cache shows in the tokens
            self.seed = int(rng.integers(1, 2**31 - 1))
            self.model = subjects.source(self.seed, self.vocab, training=training, cache_term=cache_term,
                                         grad_term=grad_term)
            if not cache_term or not any(torch.equal(self.expected(cache=c), self.expected())
                                         for c, _, _ in self.CACHE_MISTAKES):
                break
        kwargs = dict(self.options)
        if sampled:
            kwargs["generator"] = ClassSource(subjects.GENERATOR_NAME, subjects.generator_source(self.draw_seed))
        knobs = ", ".join(f"{k}={v:g}" for k, v in self.options.items() if v is not None)
        self.call = (f"generate(model, prompt, {self.new}, {knobs}{', generator=<seeded>' if sampled else ''}) "
                     f"with a prompt of shape {tuple(self.prompt.shape)}, vocabulary {self.vocab}, the model in "
                     f"{'training' if training else 'eval'} mode")
        self.kwargs, self.substituted, self.logits = kwargs, False, None
        if sampled:      # asked here, whatever the checks ask later: the student kit then holds them for every run
            try:
                self.logits = fingerprints.decode_logits(self.generate, self.model, subjects.MODEL_NAME, self.prompt,
                                                         self.new, seed=self.draw_seed, **self.options)    # (new, B, V)
                reference.next_token_probs(self.logits.double(), temperature, top_k, top_p)
                self.expected()
            except LookupError:
                pass
        self.tokens, self.model_after, self.error = None, None, None
        self.run_generate()

    def run_generate(self):
        self.tokens, self.model_after, self.error = None, None, None
        try:
            self.tokens, after = call_keeping_args(self.student, "generate", (ClassSource(subjects.MODEL_NAME, self.model),
                                                                              self.prompt, self.new), self.kwargs)
            self.model_after = after[0]
        except StudentError as err:
            # a stub generate is not started; under a sampled generate it may be next_token_probs's stub,
            # which check_tokens tells apart (and grades generate with the reference's answers in its place)
            if err.type == "NotImplementedError" and not self.sampled:
                raise
            self.error = err

    def expected(self, **switches):
        if not switches and getattr(self, "_expected", (None,))[0] == self.seed:   # (the seed's model: see __init__)
            return self._expected[1]
        tokens = fingerprints.decode_tokens(self.generate, self.model, subjects.MODEL_NAME, self.prompt, self.new, seed=self.draw_seed,
                                          **self.options, **switches)
        if not switches:
            self._expected = (self.seed, tokens)
        return tokens

    def probs_problem(self, reference):
        """Mismatch or StudentError when the student's next_token_probs, which generate calls, is wrong on
        the logits this generation meets (normalised as torch.multinomial reads them); else None."""
        if not self.options["temperature"] or reference is None:
            return None
        if self.logits is None:
            self.logits = fingerprints.decode_logits(self.generate, self.model, subjects.MODEL_NAME, self.prompt,
                                                     self.new, seed=self.draw_seed, **self.options)   # (new, B, V)
        logits = self.logits
        knobs = (self.options["temperature"], self.options["top_k"], self.options["top_p"])
        from autograder.grading.student import ExerciseUnavailable
        try:
            got = self.student.next_token_probs(logits, *knobs)
        except ExerciseUnavailable:   # not defined, or a self-check cell, which is given generate alone
            return None
        except StudentError as err:
            return err
        try:
            if isinstance(got, torch.Tensor) and got.is_floating_point() and got.shape == logits.shape:
                got = got / got.sum(-1, keepdim=True)
            expect_tensor(got, reference.next_token_probs(logits.double(), *knobs),
                          call=f"next_token_probs on the logits this generation meets, shape {tuple(logits.shape)}",
                          mutants=probs_mutants(reference.next_token_probs, logits, *knobs))
        except Mismatch as err:
            return err
        return None

    SUBSTITUTED = N_("next_token_probs is wrong (its own checks say how), so generate was graded with the reference "
                     "next_token_probs in its place.")

    def with_reference_probs(self, reference) -> bool:
        """Run the student's generate again with the reference's next_token_probs answers in place of
        theirs (judged wrong by probs_problem): each exercise earns its own points. The stand-in in
        the student's process answers from a table of the reference's probabilities for the logits
        this generation meets, and those a generate with a catalogued mistake meets (so that mistake
        is still named); any other logits reach the student's own function. False when no stand-in
        could be put in place."""
        knobs = (self.options["temperature"], self.options["top_k"], self.options["top_p"])
        seen = [self.logits]
        for variant in self.generate_variants(judged_here=True):
            switches = {k: v for k, v in variant.switches if k != "sampling"}
            if not switches:
                continue
            try:
                seen.append(fingerprints.decode_logits(self.generate, self.model, subjects.MODEL_NAME, self.prompt,
                                                       self.new, seed=self.draw_seed, **self.options, **switches))
            except LookupError:     # the student kit holds the answers for the right logits only
                continue
        inputs = torch.cat([x.reshape(-1, x.shape[-1]) for x in seen]).float()
        try:
            outputs = reference.next_token_probs(inputs.double(), *knobs)
        except LookupError:
            inputs = self.logits.reshape(-1, self.logits.shape[-1]).float()
            outputs = reference.next_token_probs(self.logits.double(), *knobs).reshape(inputs.shape)
        table = [{"key": list(knobs), "inputs": inputs, "outputs": outputs.double()}]
        report: dict = {}
        with self.student._substituted("generate", {"next_token_probs": table}, report=report) as done:
            if not done:
                return False
            self.run_generate()
        if not report.get("next_token_probs", {}).get("answered"):    # generate never called it
            return False
        self.substituted = True
        self.student._note(self.SUBSTITUTED)
        return True

    def blame_probs(self, problem, what):
        """The Mismatch that names next_token_probs as the root cause of generate's failure `what`."""
        if isinstance(problem, StudentError):
            said = (N_("generate draws each token from your next_token_probs, which raises {error}: {message}")
                    if problem.message.strip() else
                    N_("generate draws each token from your next_token_probs, which raises {error}"))
            return Mismatch(f"{what}; " + said.format(error=problem.type, message=problem.message),
                            extra=[N_("generate draws each token from your next_token_probs, which raises {error} on "
                                      "the logits this generation meets: fix next_token_probs first").format(
                                error=problem.type)])
        line = f"{what}; " + N_("generate draws each token from your next_token_probs: {evidence}").format(
            evidence=problem.line)
        if problem.found:
            return Mismatch(line, found=[(m, N_("in next_token_probs, which generate calls: {details}").format(details=d)
                                          if d else N_("in next_token_probs, which generate calls"))
                                         for m, d in problem.found])
        return Mismatch(line, extra=[N_("generate draws each token from your next_token_probs, which gives other "
                                        "probabilities than the reference on the logits this generation meets: fix "
                                        "next_token_probs first")])

    def log_hint(self):
        """(the mistakes the model's own log suggests, with words; the calls it shows, in words), or None.
        Read only once the tokens have failed and nothing in them was recognised: it can name a mistake
        but never decides a grade, since the submission can rewrite that log."""
        try:
            log = self.model_after.method("log")()
            calls = [(tuple(int(n) for n in s), None if c is None else int(c), bool(tr), bool(gr))
                     for s, c, tr, gr in log["calls"][:64]]
        except (StudentError, Mismatch, LookupError, TypeError, ValueError, AttributeError):   # rewritten: no hint
            return None
        if not calls:
            return [], N_("the model was never called")
        b, t0 = self.prompt.shape
        rest, found = calls[1:], []
        if any(len(s) == 2 and s[1] != 1 and c is not None for s, c, _, _ in rest):
            found.append(("prompt-fed-again", N_("the model's own log says that after the prompt the model was given "
                                                 "more than the new token, together with the cache")))
        elif any(len(s) == 2 and s[1] != 1 for s, _, _, _ in rest):
            found.append(("cache-not-used", N_("the model's own log says that after the prompt the model was given "
                                               "more than the new token")))
        elif any(c is None for _, c, _, _ in rest):
            found.append(("cache-dropped", N_("the model's own log says that a new token was given to the model "
                                              "without the cache")))
        if any(tr for _, _, tr, _ in calls):
            found.append(("generate-train-mode", N_("the model's own log says that the model was called in training "
                                                    "mode")))
        if any(gr for _, _, _, gr in calls):
            found.append(("generate-grad-enabled", N_("the model's own log says that the model was called with "
                                                      "gradients enabled")))
        shown = ", ".join((N_("{shape} with no cache") if c is None else N_("{shape} with a cache of {n}")).format(
            shape=s, n=c) for s, c, _, _ in calls[:4])
        more = N_("{calls} and {n} more").format(calls=shown, n=len(calls) - 4) if len(calls) > 4 else shown
        return found, N_("the model recorded the calls {calls}; the contract's are {shape} with no cache, then {step} "
                         "with caches of {n}, {next} and so on").format(calls=more, shape=(b, t0), step=(b, 1), n=t0,
                                                                       next=t0 + 1)

    def generate_variants(self, judged_here=True):
        """The catalogued ways of getting generate's tokens wrong that this run can tell apart. With
        judged_here False, only those another check judges (the cache, the position read, the draw),
        not the mode or gradients."""
        found = [Variant.of(mistake, words, cache=cache) for cache, mistake, words in self.CACHE_MISTAKES
                 if self.cache_term or cache in ("dropped", "whole")]
        found += [Variant.of("first-position-logits", "each token is drawn from the logits of the first position "
                             "(`logits[:, 0]`), not the last", position="first")]
        if self.options["temperature"] and not self.substituted:
            found += [Variant.of("temperature-after-softmax", "next_token_probs divides the probabilities by the "
                                 "temperature", sampling=(("temperature_on", "probs"),))]
            if self.options["top_p"] is not None:
                found += [Variant.of("top-p-drops-threshold-token", "next_token_probs drops the token that crosses "
                                     "top_p", sampling=(("top_p_rule", "inclusive"),))]
                if self.options["temperature"] != 1.0:
                    found += [Variant.of("top-p-before-temperature", "next_token_probs chooses the top-p set before "
                                         "dividing by the temperature", sampling=(("top_p_on", "raw"),))]
        if not judged_here:
            return found
        found += [Variant.of("generate-train-mode", "the model runs in training mode (model.eval() is never called)",
                             eval_mode=False)]
        if self.grad_term:
            found += [Variant.of("generate-grad-enabled", "the model runs with gradients enabled (no torch.no_grad())",
                                 grad=True)]
        return found

    def explained_elsewhere(self) -> bool:
        """The tokens are those of one mistake another check judges (a dropped cache, the first position,
        a sampling mistake), made in eval mode without gradients: this run's mode and gradients are right."""
        if not isinstance(self.tokens, torch.Tensor) or self.tokens.is_floating_point():
            return False
        for variant in self.generate_variants(judged_here=False):
            expected = self.expected(**dict(variant.switches))
            if self.tokens.shape == expected.shape and torch.equal(self.tokens.long(), expected.long()):
                return True
        return False

    def check_tokens(self, reference=None):
        problem = self.probs_problem(reference) if self.sampled else None
        if problem is not None and self.with_reference_probs(reference):
            problem = None                    # generate is judged on its own from here
        if self.error is not None:
            # generate's own stub (it never reached next_token_probs) is not started, whatever that one is
            stub = self.error.type == "NotImplementedError" and "next_token_probs" not in self.error.traceback
            if problem is not None and not stub:
                raise self.blame_probs(problem, f"{self.call} raised {self.error.type}: {self.error.message}")
            raise self.error
        if isinstance(self.tokens, torch.Tensor) and self.tokens.is_floating_point():
            raise Mismatch(N_("{call} returned a float tensor; token ids are integers (torch.long)").format(
                call=self.call), mistake="wrong-type")
        found = self.generate_variants()
        b, t0 = self.prompt.shape
        if isinstance(self.tokens, torch.Tensor) and tuple(self.tokens.shape) == (b, self.new) and t0:
            self.check_new_tokens_only(found)
        try:
            expect_tensor(self.tokens, self.expected(), call=self.call,
                          mutants=Fingerprints(self.expected, found, depth=2 if self.grad_term or self.cache_term else 1))
        except Mismatch as err:
            if problem is not None:
                raise self.blame_probs(problem, err.line) from None
            hint = None if err.found or err.extra else self.log_hint()
            if hint:
                found, words = hint
                raise Mismatch(err.line + "\n" + N_("(A hint from the model's own log: {words}.)").format(words=words),
                               found=found) from None
            raise
        if self.tokens.dtype != torch.long:
            raise Mismatch(N_("{call} returned dtype {dtype}; token ids are torch.long").format(
                call=self.call, dtype=str(self.tokens.dtype).replace('torch.', '')), mistake="wrong-type")

    def check_new_tokens_only(self, found):
        """The tokens came back without the prompt ((B, max_new_tokens)): wrong-shape, and the new tokens
        judged as well against the reference's, so a mistake in them is named too."""
        t0 = self.prompt.shape[1]
        shape = ("wrong-shape", "only the new tokens are returned, without the prompt before them")
        line = (f"{self.call} returned shape {tuple(self.tokens.shape)}, the new tokens without the prompt; "
                f"expected {(self.prompt.shape[0], t0 + self.new)}")
        try:
            expect_tensor(self.tokens, self.expected()[:, t0:], call=f"the new tokens of {self.call}",
                          mutants=Fingerprints(lambda **kw: self.expected(**kw)[:, t0:], found,
                                               depth=2 if self.grad_term or self.cache_term else 1))
        except Mismatch as err:
            raise Mismatch(f"{line}\n{err.line}", found=[shape] + list(err.found), extra=err.extra) from None
        raise Mismatch(line, found=[shape])

    def check_flag_restored(self):
        """The model answers after generate as a model in the mode generate found it in: its logits (no
        cache) against the grader's, for that mode and the other."""
        if self.model_after is None:
            return
        idx = self.prompt[:1]
        expected = fingerprints.model_logits(self.model, subjects.MODEL_NAME, idx, training=self.training)
        mutants = Fingerprints(
            lambda training=self.training: fingerprints.model_logits(self.model, subjects.MODEL_NAME, idx,
                                                                     training=training),
            [Variant.of("train-flag-not-restored", N_("the model was in training mode before generate and is in eval "
                                                      "mode after") if self.training else
                        N_("the model was in eval mode before generate and is in training mode after"),
                        training=not self.training)], depth=1)
        got = self.model_after(idx)
        got = got[0] if isinstance(got, (tuple, list)) and got else got
        expect_tensor(got, expected, call=N_("model(prompt[:1]) after {call} returned").format(call=self.call),
                      mutants=mutants)


@exercise("generate", points=2)
def test_generate_greedy_tokens(student, reference, rng):
    """greedy generate (temperature 0) gives the reference tokens, the prompt first"""
    for b in (1, 3):
        Run(student, reference, rng, b=b, temperature=0).check_tokens()


@exercise("generate", points=1)
def test_generate_sampled_tokens(student, reference, rng):
    """sampling with a seeded generator gives the reference tokens (temperature, top_k, top_p)"""
    Run(student, reference, rng, b=4, temperature=0.8, sampled=True).check_tokens(reference)
    Run(student, reference, rng, b=3, temperature=1.3, top_k=5, top_p=0.9, sampled=True).check_tokens(reference)


@exercise("generate", points=2)
def test_generate_uses_the_cache(student, reference, rng):
    """the model is called once with the prompt, then with one token (B, 1) at a time and the cache"""
    # judged by the tokens, on a model whose logits depend on the cache each call is given; both runs,
    # so that a mistake in the draw (judged by the sampled run) does not hide the greedy run's finding
    runs = [Run(student, reference, rng, b=b, new=new, temperature=temperature, sampled=temperature > 0,
                cache_term=True) for b, new, temperature in ((2, 6, 1.0), (3, 4, 0.0))]
    all_of(*[lambda r=run: r.check_tokens(reference) for run in runs])


@exercise("generate", points=1)
def test_generate_eval_no_grad_restores_mode(student, reference, rng):
    """generate runs in eval mode without gradients and leaves the training flag as it found it"""
    # judged by the tokens, on a model whose logits depend on the training flag and on gradients,
    # and by what the model answers after generate returned
    runs = [Run(student, reference, rng, b=2, temperature=temperature, sampled=temperature > 0, training=training,
                grad_term=True) for training, temperature in ((True, 1.0), (False, 0.0))]
    # a mistake the other checks judge (the cache, the position read, next_token_probs) made with the
    # right mode and no gradients does not fail this check too
    all_of(*[check for run in runs for check in (
        lambda r=run: None if r.error is None and r.explained_elsewhere() else r.check_tokens(reference),
        run.check_flag_restored)])
