"""The references of lesson 09 agree with independent oracles: RoPE as complex multiplication, the
sampling distribution against a plain sort-and-mask loop written here in NumPy, and generate against
full recomputation without a cache (the same tokens under greedy decoding and under a seeded
generator), on the lesson's own TinyGPT (untrained, random weights) and on the checks' course model.
The mutants' correct defaults equal the references, and each mutant switch changes the answer."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from autograder.diagnose import fingerprints
from autograder.checks import generation_subjects as subjects
from autograder.course import COURSE
from autograder.grading.reference import load_reference

L09 = "09_generating_text"


@pytest.fixture(scope="module")
def ref():
    return load_reference(L09)


# ------------------------------------------------------------------------ RoPE

def rope_by_complex_numbers(x, positions, base=10000.0):
    """Pair (i, i + d/2) is the complex number x_i + j x_{i+d/2}; rotating it is multiplying by e^{j p theta_i}."""
    x = torch.as_tensor(x, dtype=torch.float64)
    d = x.shape[-1]
    z = torch.complex(x[..., : d // 2], x[..., d // 2:])
    theta = torch.tensor([base ** (-2.0 * i / d) for i in range(d // 2)], dtype=torch.float64)
    turn = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64),
                       torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta[None, :])
    w = z * turn
    return torch.cat([w.real, w.imag], dim=-1)


@pytest.mark.parametrize("shape, positions, base", [
    ((5, 8), list(range(5)), 10000.0),
    ((2, 3, 4, 16), [7, 8, 9, 10], 10000.0),
    ((2, 6, 4), [0, 3, 11, 40, 41, 100], 500.0),
    ((1, 1, 2), [12345], 10000.0),
])
def test_rope_equals_complex_multiplication(ref, shape, positions, base):
    x = torch.randn(*shape, dtype=torch.float64, generator=torch.Generator().manual_seed(len(positions)))
    got = ref.apply_rope(x, torch.tensor(positions), base)
    assert got.dtype == torch.float64 and got.shape == x.shape
    torch.testing.assert_close(got, rope_by_complex_numbers(x, positions, base), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(fingerprints.rope(ref.apply_rope, x, torch.tensor(positions), base), got, rtol=1e-12, atol=1e-12)


def test_rope_by_hand(ref):
    # d = 2: one pair (x0, x1) turned by p radians (theta_0 = 1)
    out = ref.apply_rope(torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64), torch.tensor([0, 1]))
    torch.testing.assert_close(out, torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)]], dtype=torch.float64))
    # d = 4: pairs (0, 2) and (1, 3); pair 1 turns by p / 100 (base^(-2/4) = 1/100)
    out = ref.apply_rope(torch.tensor([[0.0, 1.0, 0.0, 0.0]], dtype=torch.float64), torch.tensor([3]))
    torch.testing.assert_close(out, torch.tensor([[0.0, math.cos(0.03), 0.0, math.sin(0.03)]], dtype=torch.float64))


def test_rope_score_depends_on_distance_only(ref):
    g = torch.Generator().manual_seed(3)
    q, k = torch.randn(1, 32, dtype=torch.float64, generator=g), torch.randn(1, 32, dtype=torch.float64, generator=g)

    def score(m, n):
        return (ref.apply_rope(q, torch.tensor([m])) @ ref.apply_rope(k, torch.tensor([n])).T).item()

    for distance in (0, 1, 5):
        scores = [score(n + distance, n) for n in (0, 7, 300)]
        assert max(scores) - min(scores) < 1e-10
    assert abs(score(5, 0) - score(6, 0)) > 1e-3


def test_rope_dtype_and_odd_size(ref):
    x = torch.randn(3, 6)
    assert ref.apply_rope(x, torch.arange(3)).dtype == torch.float32
    with pytest.raises(ValueError):
        ref.apply_rope(torch.randn(3, 5), torch.arange(3))


@pytest.mark.parametrize("switches", [dict(layout="interleaved"), dict(freq="i"), dict(freq="4i"),
                                      dict(freq="inverse"), dict(positions_used=False), dict(direction=-1)])
def test_each_rope_mutant_differs(ref, switches):
    x = torch.randn(2, 4, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    positions = torch.tensor([3, 4, 5, 6])
    assert not torch.allclose(fingerprints.rope(ref.apply_rope, x, positions, **switches), ref.apply_rope(x, positions), atol=1e-3)


# ------------------------------------------------------------------------ next_token_probs

def probs_by_sort_and_mask(logits, temperature=1.0, top_k=None, top_p=None):
    """Row by row in plain Python and NumPy: sort, cut, renormalise."""
    logits = np.asarray(logits, dtype=np.float64)
    out = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape[:-1]):
        z = logits[index] / temperature
        v = len(z)
        keep = np.ones(v, dtype=bool)
        if top_k is not None and top_k < v:
            kth = sorted(z, reverse=True)[top_k - 1]
            keep = z >= kth
        e = np.where(keep, np.exp(z - z[keep].max()), 0.0)
        p = e / e.sum()
        if top_p is not None:
            order = sorted(range(v), key=lambda i: (-p[i], i))      # most likely first, ties by index
            total, chosen = 0.0, []
            for i in order:
                if total < top_p:
                    chosen.append(i)
                total += p[i]
            keep = np.zeros(v, dtype=bool)
            keep[chosen] = True
            p = np.where(keep, p, 0.0)
        out[index] = p / p.sum()
    return out


CASES = [
    dict(), dict(temperature=0.5), dict(temperature=2.5), dict(top_k=1), dict(top_k=3), dict(top_k=50),
    dict(top_p=0.3), dict(top_p=0.75), dict(top_p=1.0), dict(temperature=0.7, top_k=4, top_p=0.8),
    dict(temperature=1.5, top_p=0.9),
]


@pytest.mark.parametrize("kwargs", CASES, ids=[json.dumps(c) for c in CASES])
def test_probs_equal_sort_and_mask(ref, kwargs):
    g = torch.Generator().manual_seed(5)
    for logits in (torch.randn(4, 11, generator=g, dtype=torch.float64) * 2,
                   torch.randint(0, 4, (2, 3, 9), generator=g).double()):          # integer logits: ties
        got = ref.next_token_probs(logits, **kwargs)
        want = probs_by_sort_and_mask(logits.numpy(), **kwargs)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-15)
        assert np.array_equal(got.numpy() == 0, want == 0)
        np.testing.assert_allclose(got.sum(-1).numpy(), 1.0, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fingerprints.sample_probs(ref.next_token_probs, logits, **kwargs).numpy(), want, rtol=1e-12, atol=1e-15)


def test_probs_rules_by_hand(ref):
    # ties with the k-th largest are kept: logits 3, 2, 2, 1 with k = 2 keep three tokens
    p = ref.next_token_probs(torch.tensor([3.0, 2.0, 2.0, 1.0], dtype=torch.float64), top_k=2)
    assert (p > 0).tolist() == [True, True, True, False]
    # top_p: probabilities 0.5, 0.25, 0.25 (logits ln 2, 0, 0); top_p = 0.6 keeps the crossing token 1 only
    logits = torch.tensor([math.log(2), 0.0, 0.0], dtype=torch.float64)
    assert (ref.next_token_probs(logits, top_p=0.6) > 0).tolist() == [True, True, False]
    # exactly 0.5 before token 1 and 0.75 before token 2: top_p = 0.75 keeps two (0.75 is not below 0.75)
    assert (ref.next_token_probs(logits, top_p=0.75) > 0).tolist() == [True, True, False]
    assert (ref.next_token_probs(logits, top_p=0.5) > 0).tolist() == [True, False, False]
    # equal probabilities: lower index first
    assert (ref.next_token_probs(torch.zeros(4, dtype=torch.float64), top_p=0.5) > 0).tolist() == [True, True, False, False]
    with pytest.raises(ValueError):
        ref.next_token_probs(logits, temperature=0.0)


@pytest.mark.parametrize("switches, kwargs", [
    (dict(temperature_on="probs"), dict(temperature=0.5)),
    (dict(top_p_rule="inclusive"), dict(top_p=0.7)),
    (dict(renormalise=False), dict(top_p=0.7)),
    (dict(renormalise=False, top_k_on="probs"), dict(top_k=3)),
    (dict(top_k_ties="drop"), dict(top_k=2)),
    (dict(top_p_order="reversed"), dict(top_p=0.5)),
])
def test_each_probs_mutant_differs(ref, switches, kwargs):
    logits = torch.tensor([[2.0, 1.0, 1.0, 1.0, 0.0, -1.0], [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    assert not torch.allclose(fingerprints.sample_probs(ref.next_token_probs, logits, **kwargs, **switches), ref.next_token_probs(logits, **kwargs))


# ------------------------------------------------------------------------ generate

def tinygpt(ref, seed=0):
    """The lesson's TinyGPT (its locked cell run in the reference's namespace), random weights."""
    nb = json.loads(COURSE[L09].solution_path.read_text())
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "tinygpt")
    namespace = dict(vars(ref))
    exec(compile("".join(cell["source"]), "<tinygpt>", "exec"), namespace)
    torch.manual_seed(seed)
    return namespace["TinyGPT"]().eval()


def generate_by_recomputation(model, prompt, n, temperature, top_k=None, top_p=None, generator=None):
    """No cache: the whole sequence through the model at every step, the oracle's own distribution."""
    idx = prompt
    with torch.no_grad():
        for _ in range(n):
            logits, _ = model(idx, cache=None)
            last = logits[:, -1]
            if temperature == 0:
                token = last.argmax(-1, keepdim=True)
            else:
                probs = torch.from_numpy(probs_by_sort_and_mask(last.double().numpy(), temperature, top_k, top_p))
                token = torch.multinomial(probs.float(), 1, generator=generator)
            idx = torch.cat([idx, token], dim=1)
    return idx


def course_model(seed=11, vocab=9):
    scope = {}
    exec(subjects.source(seed, vocab, training=False), {"torch": torch, "nn": torch.nn, "math": math}, scope)
    return scope[subjects.MODEL_NAME]


@pytest.mark.parametrize("which", ["tinygpt", "course model"])
def test_generate_greedy_equals_recomputation(ref, which):
    model = tinygpt(ref) if which == "tinygpt" else course_model()
    prompt = torch.tensor([[12, 3, 4], [1, 10, 5]]) if which == "tinygpt" else torch.tensor([[1, 2, 3], [4, 5, 6]])
    got = ref.generate(model, prompt, 20, temperature=0)
    assert got.shape == (2, 23) and got.dtype == torch.long and torch.equal(got[:, :3], prompt)
    assert torch.equal(got, generate_by_recomputation(model, prompt, 20, 0))


@pytest.mark.slow
@pytest.mark.parametrize("which", ["tinygpt", "course model"])
@pytest.mark.parametrize("kwargs", [dict(temperature=1.0), dict(temperature=0.8, top_k=4, top_p=0.9)])
def test_generate_seeded_equals_recomputation(ref, which, kwargs):
    model = tinygpt(ref, seed=1) if which == "tinygpt" else course_model(seed=5)
    prompt = torch.tensor([[8], [8], [3]])
    got = ref.generate(model, prompt, 25, generator=torch.Generator().manual_seed(7), **kwargs)
    want = generate_by_recomputation(model, prompt, 25, generator=torch.Generator().manual_seed(7), **kwargs)
    assert torch.equal(got, want)


def test_tinygpt_cache_equals_whole_sequence(ref):
    """The lesson's model: logits of a sequence at once equal those token by token through the cache."""
    model = tinygpt(ref, seed=2)
    ids = torch.randint(0, 13, (2, 12), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        whole, _ = model(ids)
        steps, cache = [], None
        for t in range(12):
            out, cache = model(ids[:, t:t + 1], cache)
            steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), whole, rtol=1e-4, atol=1e-5)


def test_generate_restores_mode_and_calls(ref):
    model = course_model()
    model.train()
    ref.generate(model, torch.tensor([[1, 2]]), 5, temperature=0)
    assert model.training
    calls = model.log()["calls"]
    assert [tuple(s) for s, _, _, _ in calls] == [(1, 2)] + [(1, 1)] * 4
    assert [c for _, c, _, _ in calls] == [None, 2, 3, 4, 5]
    assert not any(training or grad for _, _, training, grad in calls)


@pytest.mark.parametrize("sampled", [False, True])
def test_decode_tokens_default_equals_reference(ref, sampled):
    source = subjects.source(21, 10)
    prompt = torch.tensor([[1, 2, 3], [3, 2, 1]])
    kwargs = dict(temperature=0.9, top_k=6, top_p=0.95) if sampled else dict(temperature=0)
    scope = {}
    exec(source, {"torch": torch, "nn": torch.nn, "math": math}, scope)
    got = ref.generate(scope[subjects.MODEL_NAME], prompt, 8, generator=torch.Generator().manual_seed(4) if sampled
                       else None, **kwargs)
    want = fingerprints.decode_tokens(ref.generate, source, subjects.MODEL_NAME, prompt, 8, seed=4 if sampled else None, **kwargs)
    assert torch.equal(got, want)
    assert torch.equal(fingerprints.decode_tokens(ref.generate, source, subjects.MODEL_NAME, prompt, 8, seed=4 if sampled else None,
                                             cache="recompute", **kwargs), want)
    for switches in (dict(cache="dropped"), dict(eval_mode=False)):
        assert not torch.equal(fingerprints.decode_tokens(ref.generate, source, subjects.MODEL_NAME, prompt, 8,
                                                     seed=4 if sampled else None, **kwargs, **switches), want)


@pytest.mark.parametrize("terms", [dict(cache_term=True), dict(grad_term=True), dict(cache_term=True, grad_term=True)])
@pytest.mark.parametrize("sampled", [False, True])
def test_decode_tokens_on_telltale_models_equals_reference(ref, terms, sampled):
    """The models that make the cache and the gradient mode show in the tokens (issue 25): the reference
    generate, starting from training mode, gives decode_tokens' default tokens; the ways of misusing the
    cache or the modes give others; decode_logits are the last logits the reference chose from."""
    source = subjects.source(33, 10, training=True, **terms)
    prompt = torch.tensor([[1, 2, 3], [3, 2, 1]])
    kwargs = dict(temperature=0.9, top_k=6, top_p=0.95) if sampled else dict(temperature=0)
    seed = 4 if sampled else None
    scope = {}
    exec(source, {"torch": torch, "nn": torch.nn, "math": math}, scope)
    model = scope[subjects.MODEL_NAME]
    seen = []
    forward = model.forward
    model.forward = lambda idx, cache=None: seen.append(forward(idx, cache)) or seen[-1]
    got = ref.generate(model, prompt, 8, generator=torch.Generator().manual_seed(4) if sampled else None, **kwargs)
    assert model.training
    want = fingerprints.decode_tokens(ref.generate, source, subjects.MODEL_NAME, prompt, 8, seed=seed, **kwargs)
    assert torch.equal(got, want)
    chosen_from = torch.stack([logits[:, -1] for logits, _ in seen[:8]])
    assert torch.equal(fingerprints.decode_logits(ref.generate, source, subjects.MODEL_NAME, prompt, 8, seed=seed, **kwargs),
                       chosen_from)
    wrong = [dict(eval_mode=False)]
    wrong += [dict(cache=c) for c in ("recompute", "whole", "dropped", "stale")] if terms.get("cache_term") else []
    wrong += [dict(grad=True)] if terms.get("grad_term") else []
    for switches in wrong:
        assert not torch.equal(fingerprints.decode_tokens(ref.generate, source, subjects.MODEL_NAME, prompt, 8, seed=seed,
                                                          **kwargs, **switches), want), switches


def test_model_logits_is_the_model_after_generate(ref):
    """What the grader expects the model to answer after generate: the model in the mode it was found in."""
    source = subjects.source(8, 9, training=True, grad_term=True)
    scope = {}
    exec(source, {"torch": torch, "nn": torch.nn, "math": math}, scope)
    model = scope[subjects.MODEL_NAME]
    ref.generate(model, torch.tensor([[1, 2]]), 4, temperature=0)
    idx = torch.tensor([[1, 2]])
    after = model(idx)[0].detach()
    assert torch.equal(fingerprints.model_logits(source, subjects.MODEL_NAME, idx, training=True), after)
    assert not torch.equal(fingerprints.model_logits(source, subjects.MODEL_NAME, idx, training=False), after)
