"""Checks for lesson 04: the worked example recomputed, and the published errors found."""
import numpy as np

from autograder import mutants
from autograder.checking import Mismatch, exercise, expect_array

LESSON = "04_worked_example"
KEYS = ["Q1", "K1", "V1", "Q2", "K2", "V2", "scores1", "scores2", "weights1", "weights2",
        "head1", "head2", "concat"]


def answer(student):
    got = student.worked_example()
    if not isinstance(got, dict):
        raise Mismatch(f"worked_example() returned a {type(got).__name__}; expected a dict with the keys "
                       f"{', '.join(KEYS)}", mistake="wrong-type")
    missing = [k for k in KEYS if k not in got]
    if missing:
        raise Mismatch(f"worked_example() is missing the key(s) {', '.join(missing)}")
    return got


def example_mutants(reference, key):
    """What a wrong scale or softmax axis would give for `key`, from the lesson's own matrices."""
    ns = reference
    h = key[-1]
    if not h.isdigit():
        return []
    q = ns.X @ getattr(ns, f"W_Q{h}")
    k = ns.X @ getattr(ns, f"W_K{h}")
    v = ns.X @ getattr(ns, f"W_V{h}")
    which = {"scores": None, "weights": 1, "head": 0}.get(key[:-1])
    if key.startswith("scores"):
        return [("missing-scale", lambda: q @ k.T), ("wrong-scale", lambda: q @ k.T / q.shape[-1])]
    if which is None:
        return []
    return [(m, (lambda kw=kw: mutants.np_attention(q, k, v, **kw)[which])) for m, kw in
            [("missing-scale", {"scale": "none"}), ("wrong-scale", {"scale": "dk"}),
             ("softmax-wrong-axis", {"axis": -2})]]


def check_keys(student, reference, keys):
    got = answer(student)
    expected = reference.worked_example()
    for key in keys:
        expect_array(np.asarray(got[key]) if isinstance(got[key], list) else got[key], expected[key],
                     call=f"worked_example()['{key}']", mutants=example_mutants(reference, key))


@exercise("worked_example", points=1)
def test_projections_of_both_heads(student, reference):
    """Q, K and V of both heads are X times the head's matrices"""
    check_keys(student, reference, ["Q1", "K1", "V1", "Q2", "K2", "V2"])


@exercise("worked_example", points=1)
def test_scaled_scores(student, reference):
    """the scores are QK^T / sqrt(d_k), for both heads"""
    check_keys(student, reference, ["scores1", "scores2"])


@exercise("worked_example", points=1)
def test_weights_and_heads(student, reference):
    """the weights are row softmaxes and the heads are weights times V"""
    check_keys(student, reference, ["weights1", "weights2", "head1", "head2"])


@exercise("worked_example", points=1)
def test_concat(student, reference):
    """concat puts head 1 and head 2 side by side, shape (3, 4)"""
    check_keys(student, reference, ["concat"])


def errors_answer(student):
    got = student.published_errors()
    if isinstance(got, (list, tuple, frozenset)):
        got = set(got)
    if not isinstance(got, set) or not all(isinstance(k, str) for k in got):
        raise Mismatch(f"published_errors() returned {type(got).__name__}; expected a set of key names "
                       "such as {'K1', ...}", mistake="wrong-type")
    return got


@exercise("published_errors", points=2)
def test_names_every_wrong_published_value(student, reference):
    """published_errors names every published value that is wrong"""
    got, expected = errors_answer(student), reference.published_errors()
    missed = sorted(expected - got, key=KEYS.index)
    if missed:
        raise Mismatch(f"published_errors() misses {', '.join(missed)}: compare your worked_example() with "
                       "PUBLISHED at the precision it was printed (4 decimals)")


@exercise("published_errors", points=1)
def test_names_no_correct_value(student, reference):
    """published_errors names nothing that was printed correctly (or not printed at all)"""
    got, expected = errors_answer(student), reference.published_errors()
    extra = sorted(got - expected)
    if extra:
        unprinted = [k for k in extra if k not in reference.PUBLISHED]
        why = (f"; {', '.join(unprinted)} {'was' if len(unprinted) == 1 else 'were'} never printed, "
               "so it cannot be a published error") if unprinted else ""
        raise Mismatch(f"published_errors() also names {', '.join(extra)}, which {'is' if len(extra) == 1 else 'are'} "
                       f"not wrong in the publication{why}")
