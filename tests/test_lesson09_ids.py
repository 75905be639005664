"""Issue 32: lesson 09's new ids each have a catalogue entry with a fix in the lesson's own words, a
fingerprint a check offers, and a corpus entry; the feedback says each thing once."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder.diagnose.mistakes import CATALOGUE
from autograder.diagnose.root_cause import summary

ROOT = Path(__file__).resolve().parents[1]
NEW = ["first-position-logits", "cache-dropped", "prompt-fed-again", "top-p-before-temperature", "rope-sign-flipped"]
LESSON = "09_generating_text"
NINE = NEW + ["rope-interleaved", "rope-wrong-frequency", "rope-positions-ignored", "temperature-after-softmax",
              "top-p-drops-threshold-token", "not-renormalised", "cache-not-used", "top-k-ties-dropped"]


@pytest.mark.parametrize("mistake", NEW)
def test_each_new_id_is_catalogued_offered_and_in_the_corpus(mistake):
    assert mistake in CATALOGUE and CATALOGUE[mistake].hint
    checks = (ROOT / "autograder" / "checks" / "test_09_generating_text.py").read_text()
    assert f'"{mistake}"' in checks
    corpus = [p for p in (ROOT / "tests" / "corpus").glob("*09*.py")
              if re.search(rf"^# expect: wrong \S+ .*\b{re.escape(mistake)}\b", p.read_text(), re.M)]
    assert corpus, mistake


@pytest.mark.parametrize("mistake", NINE)
def test_fixes_use_only_names_the_lesson_introduces(mistake):
    """inv_freq is the solution's name, never the lesson's (the notebook speaks of θ_i and the angles)."""
    released = (ROOT / "lessons" / f"{LESSON}.ipynb").read_text()
    assert "inv_freq" not in released
    text = summary(LESSON, "apply_rope", [(mistake, None)])
    assert "inv_freq" not in text, text


@pytest.mark.parametrize("mistake, detail, said", [
    ("rope-positions-ignored", "rows are rotated by 0..T-1 whatever `positions` says", "whatever `positions` says"),
    ("wrong-scale", "the scores are divided by d_k instead of sqrt(d_k)", "instead of sqrt(d_k)"),
])
def test_what_the_code_does_is_not_said_again_by_the_explanation(mistake, detail, said):
    text = summary("01_scaled_dot_product_attention" if mistake == "wrong-scale" else LESSON, "x", [(mistake, detail)])
    assert text.count(said) == 1, text


def test_the_cache_mistakes_do_not_claim_the_same_tokens():
    """'gives the same tokens' holds for recomputing without the cache, never for the sequence fed again
    with the cache (prompt-fed-again) or a dropped cache."""
    for mistake in ("prompt-fed-again", "cache-dropped"):
        assert "same tokens" not in CATALOGUE[mistake].explanation
    assert "whole sequence at every step together with the cache" not in CATALOGUE["cache-not-used"].explanation
