"""Lesson 09's generate is graded on what the grader computes, not on what the student's process says.

The course model (autograder/checks/generation_subjects.py) logs its calls, but the log lives in
the student's process: a submission can rewrite it, replace the method that reads it, or wrap the
model so that its calls look cached while the tokens come from full recomputation. Issue 25 asks
that no grade rest on such a report. Each attack below recomputes without the cache and makes the
calls look as the contract says; the cache check must give it nothing, and the honest reference
must still get full marks. Each test ASSERTS THAT THE PROTECTION HOLDS.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT, notebook_with
from autograder.classroom.runner import grade_many

LESSON = "09_generating_text"
CACHE_CHECK = "the model is called once with the prompt"

# the model's log as a contract-abiding generate leaves it: [shape, cache length, training, grad]
IDEAL_LOG = '''
def ideal_calls(prompt, max_new_tokens):
    b, t0 = prompt.shape
    return [[[b, t0], None, False, False]] + [[[b, 1], t0 + j, False, False] for j in range(max_new_tokens - 1)]
'''

# every attack draws its tokens the reference's way, from logits of its own choosing
SAMPLE = '''
def pick(last, temperature, top_k, top_p, generator):
    if temperature == 0:
        return last.argmax(dim=-1, keepdim=True)
    return torch.multinomial(next_token_probs(last, temperature, top_k, top_p), 1, generator=generator)
'''

ATTACKS = {
    # recomputes the whole sequence at every step, then writes the log a cached generate leaves
    "forged log": IDEAL_LOG + SAMPLE + '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    was_training = model.training
    model.eval()
    out = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(out)
            out = torch.cat([out, pick(logits[:, -1], temperature, top_k, top_p, generator)], dim=1)
    model.train(was_training)
    if hasattr(model, "calls"):
        model.calls[:] = [tuple(c) for c in ideal_calls(prompt, max_new_tokens)]
    return out
''',
    # makes every call the contract asks for (prompt, then (B, 1) with the cache), but chooses each
    # token from a full recomputation without the cache, and erases those calls from the log
    "decoy calls": SAMPLE + '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    was_training = model.training
    model.eval()
    out = prompt
    with torch.no_grad():
        _, cache = model(prompt, cache=None)
        kept = list(getattr(model, "calls", []))
        for step in range(max_new_tokens):
            logits, _ = model(out)                      # the whole sequence, no cache
            if hasattr(model, "calls"):
                model.calls[:] = kept
            token = pick(logits[:, -1], temperature, top_k, top_p, generator)
            out = torch.cat([out, token], dim=1)
            if step + 1 < max_new_tokens:
                _, cache = model(token, cache=cache)    # the call the contract asks for, unused
                kept = list(getattr(model, "calls", []))
    model.train(was_training)
    return out
''',
    # replaces the method the checks used to read the log with one that reports an ideal run
    "patched log method": IDEAL_LOG + SAMPLE + '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    was_training = model.training
    fake = {"calls": ideal_calls(prompt, max_new_tokens), "training": was_training}
    model.log = lambda: fake
    type(model).log = lambda self: fake
    model.eval()
    out = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, _ = model(out, cache=None)
            out = torch.cat([out, pick(logits[:, -1], temperature, top_k, top_p, generator)], dim=1)
    model.train(was_training)
    return out
''',
    # calls the model exactly as the contract says, through a wrapper of its forward that ignores
    # the cache and recomputes the whole history; the log then shows only the calls that wrapper
    # forwards to (the whole history, no cache), so it is rewritten too
    "wrapped forward": IDEAL_LOG + SAMPLE + '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    inner = model.forward
    history = []
    def forward(idx, cache=None):
        history.append(idx)
        whole = torch.cat(history, dim=1)
        logits, _ = inner(whole, cache=None)
        return logits[:, -idx.shape[1]:], whole
    model.forward = forward
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            tokens = [prompt]
            logits, cache = model(prompt, cache=None)
            for step in range(max_new_tokens):
                token = pick(logits[:, -1], temperature, top_k, top_p, generator)
                tokens.append(token)
                if step + 1 < max_new_tokens:
                    logits, cache = model(token, cache=cache)
            return torch.cat(tokens, dim=1)
    finally:
        model.train(was_training)
        del model.forward
        if hasattr(model, "calls"):
            model.calls[:] = [tuple(c) for c in ideal_calls(prompt, max_new_tokens)]
''',
    # drops the cache, and its log cannot be read: the check fails on the tokens and still reports
    "dropped cache, log raises": SAMPLE + '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    def log():
        raise RuntimeError("no log here")
    model.log = log
    was_training = model.training
    model.eval()
    with torch.no_grad():
        tokens = [prompt]
        logits, _ = model(prompt, cache=None)
        for step in range(max_new_tokens):
            token = pick(logits[:, -1], temperature, top_k, top_p, generator)
            tokens.append(token)
            logits, _ = model(token, cache=None)
    model.train(was_training)
    return torch.cat(tokens, dim=1)
''',
}

# not a way of avoiding the cache (so not in ATTACKS): nothing the catalogue names, which is when
# the checks read the log for a hint; this log answers with garbage
PROMPT_BY_TOKENS = SAMPLE + '''
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    model.log = lambda: {"calls": [[["x"], "y", 1, 2]] * 3, "training": "z"}
    was_training = model.training
    model.eval()
    with torch.no_grad():
        tokens, cache = [prompt], None
        for j in range(prompt.shape[1]):                # the prompt one token at a time
            logits, cache = model(prompt[:, j:j + 1], cache=cache)
        for step in range(max_new_tokens):
            token = pick(logits[:, -1], temperature, top_k, top_p, generator)
            tokens.append(token)
            logits, cache = model(token, cache=cache)
    model.train(was_training)
    return torch.cat(tokens, dim=1)
'''


def reference_cells() -> dict[str, str]:
    nb = json.loads((ROOT / "solutions" / f"{LESSON}.ipynb").read_text(encoding="utf-8"))
    cells = {}
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in ("apply_rope", "next_token_probs", "generate"):
            cells[gid] = "".join(cell["source"])
    assert set(cells) == {"apply_rope", "next_token_probs", "generate"}
    return cells


@pytest.fixture(scope="module")
def results():
    ref = reference_cells()
    with tempfile.TemporaryDirectory(prefix="generate-attacks-") as tmp:
        students = {"reference": {LESSON: notebook_with(LESSON, ref, Path(tmp) / "reference")}}
        for i, (name, generate) in enumerate(ATTACKS.items()):
            cells = {"next_token_probs": ref["next_token_probs"], "generate": generate}
            students[name] = {LESSON: notebook_with(LESSON, cells, Path(tmp) / f"attack{i}")}
        cells = {"next_token_probs": ref["next_token_probs"], "generate": PROMPT_BY_TOKENS}
        students["prompt by tokens"] = {LESSON: notebook_with(LESSON, cells, Path(tmp) / "prompt")}
        return grade_many(students, jobs=2, show=lambda *_: None)


def generate_checks(result: dict) -> dict[str, dict]:
    return {t["name"].split(": ", 1)[1]: t for t in result["tests"] if "exercise:generate" in t["tags"]}


def cache_check(result: dict) -> dict:
    (check,) = [t for name, t in generate_checks(result).items() if name.startswith(CACHE_CHECK)]
    return check


def test_the_reference_gets_full_marks(results):
    tests = [t for t in results["reference"]["tests"] if f"lesson:{LESSON}" in t["tags"]]
    assert tests and all(t["score"] == t["max_score"] for t in tests), \
        [(t["name"], t["score"], t["output"]) for t in tests if t["score"] < t["max_score"]]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_recomputing_without_the_cache_earns_nothing_for_the_cache(results, attack):
    check = cache_check(results[attack])
    assert check["score"] == 0, f"{attack}: {check['score']} points for the cache, recomputing without it"
    assert check["status"] == "failed"
    # feeding each new token without its cache has had a name of its own since issue 32
    expected = "mistake:cache-dropped" if attack == "dropped cache, log raises" else "mistake:cache-not-used"
    assert expected in check["tags"], check


@pytest.mark.parametrize("attack", sorted(set(ATTACKS) - {"dropped cache, log raises"}))
def test_a_forged_log_is_not_what_decides(results, attack):
    """Recomputation gives the right tokens on a model that hides the cache (the greedy and sampled
    checks pass), so only the cache check fails, and it says what the tokens show."""
    checks = generate_checks(results[attack])
    lost = {name for name, t in checks.items() if t["score"] < t["max_score"]}
    assert lost == {cache_check(results[attack])["name"].split(": ", 1)[1]}, lost
    assert "whole sequence" in cache_check(results[attack])["output"]


@pytest.mark.parametrize("name", ["dropped cache, log raises", "prompt by tokens"])
def test_an_unreadable_log_costs_only_the_hint(results, name):
    """A log that raises or answers garbage is no evidence: the check fails on the tokens, and says so
    without a hint (the prompt fed one token at a time is nothing the catalogue names)."""
    check = cache_check(results[name])
    assert check["score"] == 0 and check["status"] == "failed"
    assert "no log here" not in check["output"] and "hint" not in check["output"]
    assert "compared with the reference" in check["output"], check["output"]
