"""Checks for lesson 04: the worked example recomputed, and the published errors found."""
import hashlib
import hmac

import numpy as np

from autograder.i18n import N_
from autograder.diagnose import fingerprints
from autograder.grading.checking import Fingerprints, Mismatch, Variant, exercise, expect_array, scale_variants

LESSON = "04_worked_example"
KEYS = ["Q1", "K1", "V1", "Q2", "K2", "V2", "scores1", "scores2", "weights1", "weights2",
        "head1", "head2", "concat"]


PRINTED_DECIMALS = 4


def hidden_example(public, secret_key):
    """The example the checks grade on under a course secret: X, the six W matrices and PUBLISHED
    drawn from the secret, in the shapes and style of the published ones (small integers; PUBLISHED
    is the correct values printed to 4 decimals with some keys misprinted, never the same keys as
    in the lesson). Every value the checks expect then differs from the public example's, so the
    kit's recordings (the public example's answers) are worth nothing. `public` is the reference."""
    seed = int.from_bytes(hmac.new(secret_key, b"04:example", hashlib.sha256).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    names = ["W_Q1", "W_K1", "W_V1", "W_Q2", "W_K2", "W_V2"]
    truth = public.worked_example()
    printed = list(public.PUBLISHED)
    wrong_public = public.published_errors()
    while True:
        values = {"X": rng.integers(-3, 7, size=public.X.shape).astype(float)}
        values.update({n: rng.integers(-1, 3, size=getattr(public, n).shape).astype(float) for n in names})
        ns = _rebound(public, values)
        correct = ns.worked_example()
        exact = all(np.abs(np.round(np.asarray(correct[k], float), PRINTED_DECIMALS) - correct[k]).max() < 4.5e-5
                    for k in printed)          # printed to 4 decimals, never at a rounding tie
        if exact and all(not np.allclose(correct[k], truth[k], rtol=0, atol=1e-3) for k in KEYS):
            break
    while True:
        wrong = {k for k in printed if rng.random() < 0.5}
        if wrong - wrong_public and wrong_public - wrong:     # neither answer scores with the other
            break
    published = {}
    for key in printed:
        value = np.round(np.asarray(correct[key], dtype=float), PRINTED_DECIMALS)
        if key in wrong:               # a misprint: one entry off by a visible amount
            index = tuple(rng.integers(0, n) for n in value.shape)
            step = 1.0 if key[0] in "QKV" or key.startswith("scores") else 0.01 * rng.integers(1, 9)
            value = value.copy()
            value[index] = np.round(value[index] + step * rng.choice([-1.0, 1.0]), PRINTED_DECIMALS)
        published[key] = value
    values["PUBLISHED"] = published
    return values


def _rebound(reference, values):
    """The reference's functions reading `values` in place of their setup cell's globals."""
    import types
    scope = dict(vars(reference))
    scope.update(values)
    for name in ("worked_example", "published_errors"):
        f = scope[name]
        scope[name] = types.FunctionType(f.__code__, scope, f.__name__, f.__defaults__, f.__closure__)
    return types.SimpleNamespace(**scope)


def example(student, reference, secret_key):
    """The reference the checks compare with. With a course secret, hidden inputs are put in the
    student's notebook in place of the setup cell's (X, W_*, PUBLISHED; computed once per lesson)
    and the reference reads the same; without one, the setup cell's public example."""
    if not secret_key:
        return reference
    hidden = getattr(student, "_hidden_example", None)
    if hidden is None:
        hidden = student._hidden_example = hidden_example(reference, secret_key)
    student._assign(**hidden)
    ns = _rebound(reference, hidden)
    ns._hidden_inputs = True
    student._compared_with = ns          # what a stand-in for worked_example answers from (independence.py)
    return ns


def answer(student):
    got = student.worked_example()
    if not isinstance(got, dict):
        raise Mismatch(N_("worked_example() returned a {kind}; expected a dict with the keys {names}").format(
            kind=type(got).__name__, names=", ".join(KEYS)), mistake="wrong-type")
    missing = [k for k in KEYS if k not in got]
    if missing:
        raise Mismatch(N_("worked_example() is missing the key(s) {names}").format(names=", ".join(missing)))
    return got


def example_mutants(reference, key):
    """What a transposed weight matrix, a wrong scale or softmax axis would give for `key`."""
    ns = reference
    h = key[-1]
    if not h.isdigit():
        return []
    what = {"Q": 0, "K": 1, "V": 2, "scores": 3, "weights": 4, "head": 5}.get(key[:-1])
    if what is None:
        return []
    d_k = getattr(ns, f"W_Q{h}").shape[-1]

    def run(**kw):
        return fingerprints.worked_example(ns.worked_example, key, **kw)

    found = [Variant.of("weights-transposed", N_("Q{h}, K{h} and V{h} are computed as X @ W.T instead of X @ W").format(h=h),
                        transposed=True)]
    if what >= 3:
        found += scale_variants(d_k)
    if what >= 4:
        found.append(Variant.of("softmax-wrong-axis", "the softmax normalises each column (over the queries) "
                                "instead of each row (over the keys)", axis=-2))
    return Fingerprints(run, distinct(run, found))


def distinct(run, found):
    """The variants whose answers on the example differ from every other variant's (the example's
    numbers are fixed, so where two hypotheses give one answer, e.g. saturated weights with and
    without a scale, neither is named)."""
    answers = []
    for v in found:
        try:
            answers.append(np.asarray(run(**dict(v.switches)), dtype=np.float64))
        except Exception:
            answers.append(None)
    keep = []
    for i, v in enumerate(found):
        same = [j for j, a in enumerate(answers) if j != i and a is not None and answers[i] is not None
                and a.shape == answers[i].shape and np.allclose(a, answers[i], rtol=1e-5, atol=1e-8)
                and (found[j].mistake, found[j].detail) != (v.mistake, v.detail)]
        if not same:
            keep.append(v)
    return keep


def check_keys(student, reference, keys):
    got = answer(student)
    expected = reference.worked_example()
    for key in keys:
        expect_array(np.asarray(got[key]) if isinstance(got[key], list) else got[key], expected[key],
                     call=(N_("{function} (graded with other X and W matrices in place of the setup cell's)")
                           if vars(reference).get("_hidden_inputs") else "{function}").format(
                         function=f"worked_example()['{key}']"),
                     mutants=example_mutants(reference, key))


@exercise("worked_example", points=1)
def test_projections_of_both_heads(student, reference, secret_key):
    """Q, K and V of both heads are X times the head's matrices"""
    check_keys(student, example(student, reference, secret_key), ["Q1", "K1", "V1", "Q2", "K2", "V2"])


@exercise("worked_example", points=1)
def test_scaled_scores(student, reference, secret_key):
    """the scores are QK^T / sqrt(d_k), for both heads"""
    check_keys(student, example(student, reference, secret_key), ["scores1", "scores2"])


@exercise("worked_example", points=1)
def test_weights_and_heads(student, reference, secret_key):
    """the weights are row softmaxes and the heads are weights times V"""
    check_keys(student, example(student, reference, secret_key), ["weights1", "weights2", "head1", "head2"])


@exercise("worked_example", points=1)
def test_concat(student, reference, secret_key):
    """concat puts head 1 and head 2 side by side, shape (3, 4)"""
    check_keys(student, example(student, reference, secret_key), ["concat"])


def errors_answer(student):
    """The student's one answer: published_errors() is called once per submission and every check
    judges that same answer (a function that answers differently on each call gains nothing). Graded
    again with the reference's worked_example in its place (grading/independence.py), it is asked
    again in each check: that answer is the one the stand-in sees its calls for."""
    if getattr(student._submission, "answerer", None) is not None:
        try:
            kind, got = "value", student.published_errors()
        except Exception as exc:
            kind, got = "raised", exc
    else:
        if getattr(student, "_published_errors", None) is None:
            try:
                student._published_errors = ("value", student.published_errors())
            except Exception as exc:
                student._published_errors = ("raised", exc)
        kind, got = student._published_errors
    if kind == "raised":
        raise got
    if isinstance(got, (list, tuple, frozenset)):
        got = set(got)
    if not isinstance(got, set) or not all(isinstance(k, str) for k in got):
        raise Mismatch(N_("published_errors() returned {kind}; expected a set of key names such as {{'K1', ...}}")
                       .format(kind=type(got).__name__), mistake="wrong-type")
    return got


@exercise("published_errors", points=2)
def test_names_every_wrong_published_value(student, reference, secret_key):
    """published_errors names every published value that is wrong"""
    reference = example(student, reference, secret_key)
    got, expected = errors_answer(student), reference.published_errors()
    if got >= set(reference.PUBLISHED):
        raise Mismatch(N_("published_errors() names every printed value, so it tells no wrong value from a right "
                          "one: compare each with your worked_example() and name only those that differ"))
    missed = sorted(expected - got, key=KEYS.index)
    if missed:
        raise Mismatch(N_("published_errors() misses {names}: compare your worked_example() with PUBLISHED at the "
                          "precision it was printed (4 decimals)").format(names=", ".join(missed)))


@exercise("published_errors", points=1)
def test_names_no_correct_value(student, reference, secret_key):
    """published_errors names nothing that was printed correctly (or not printed at all)"""
    reference = example(student, reference, secret_key)
    got, expected = errors_answer(student), reference.published_errors()
    if not got & expected:   # naming nothing (or nothing wrong) is not a finding
        raise Mismatch(N_("published_errors() names none of the published values that are wrong; this check gives "
                          "points for naming the wrong ones without naming right ones, and naming nothing finds "
                          "nothing"))
    extra = sorted(got - expected)
    if extra:
        unprinted = [k for k in extra if k not in reference.PUBLISHED]
        why = ("; " + (N_("{names} was never printed, so it cannot be a published error") if len(unprinted) == 1
                       else N_("{names} were never printed, so it cannot be a published error")).format(
            names=", ".join(unprinted))) if unprinted else ""
        raise Mismatch((N_("published_errors() also names {names}, which is not wrong in the publication")
                        if len(extra) == 1 else
                        N_("published_errors() also names {names}, which are not wrong in the publication")).format(
            names=", ".join(extra)) + why)
