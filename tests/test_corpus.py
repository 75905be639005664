"""The graded corpus: every correct submission gets full marks, every exercise expected wrong loses
points, and, over the whole corpus, the grader names >= 95 % of the catalogued mistakes present and
>= 95 % of what it names is really there (see autograder/accuracy.py and tests/corpus/)."""
from __future__ import annotations

import pytest

from autograder.classroom import accuracy
from autograder.diagnose.mistakes import CATALOGUE

pytestmark = pytest.mark.slow     # builds the kit, runs notebooks or grades whole classes: not in the quick loop

ENTRIES = accuracy.load()


@pytest.fixture(scope="module")
def verdicts(corpus_results):
    return {entry.name: accuracy.judge(entry, corpus_results[entry.name]) for entry in ENTRIES}


@pytest.mark.parametrize("name", [e.name for e in ENTRIES])
def test_corpus_entry_is_graded_as_expected(verdicts, name):
    v = verdicts[name]
    assert v.ok, v.detail


def test_each_root_cause_is_said_once_and_whole(verdicts):
    """In every wrong entry's root causes: no sentence twice, no clause of "In your code: ..." said
    again by another (shapes aside), and no bracket left open (clauses kept alone once cut one:
    "(head j holds head j // n_rep. In ...")."""
    import re
    from autograder.diagnose.root_cause import _clauses, _shape_free
    from test_feedback_economy import repeated
    bad = []
    for v in verdicts.values():
        for out in v.output.split("\n\n["):
            cause = out.split("\nFix:")[0] if "Root cause" in out else ""
            for m in re.finditer(r"In your code: (.*?)\.(?: |\n|$)", cause):
                clauses = [_shape_free(c) for c in _clauses(m.group(1))]
                bad += [(v.entry.name, "twice", c) for c in set(clauses) if clauses.count(c) > 1]
            # (several mistakes explained by one earlier exercise each end "Fix: the same as for ... above.")
            bad += [(v.entry.name, "repeated", r) for r in
                    repeated("\n".join(ln for ln in cause.splitlines() if not ln.strip().startswith("Fix:")))]
            bad += [(v.entry.name, "bracket", ln) for ln in cause.splitlines() if ln.count("(") != ln.count(")")]
    assert not bad, bad


def test_doing_nothing_scores_zero(verdicts):
    """tests/corpus/degenerate_*: answers that compute nothing (tests/degenerate.py) get 0 points."""
    entries = [v for v in verdicts.values() if v.entry.name.startswith("degenerate_")]
    assert len(entries) >= 40
    earned = {v.entry.name: v.scores for v in entries if any(s > 0 or m == 0 for s, m in v.scores.values())
              or set(v.scores) != set(v.entry.wrong)}
    assert not earned, earned


def test_corpus_declares_only_catalogued_mistakes():
    for e in ENTRIES:
        unknown = [m for m in e.mistakes if m not in CATALOGUE]
        assert not unknown, f"{e.name}: {unknown}"
        assert e.expect == "correct" or e.wrong, e.name


def test_corpus_has_combined_mistakes():
    combos = [e for e in ENTRIES if len(e.mistakes) >= 2]
    assert len(combos) >= 15, [e.name for e in combos]


def test_accuracy_table(verdicts):
    """The course's own entries (walkthrough cases, combinations, written mutants)."""
    text, stats = accuracy.table([v for v in verdicts.values() if not v.entry.name.startswith("real_")])
    assert stats["false_fails"] == 0 and stats["false_passes"] == 0, text
    assert stats["named_share"] == 1.0, text          # issue 23: every catalogued mistake named
    assert stats["precision"] >= 0.95, text


# Published code (tests/corpus/real_*, adapted from other people's repositories) is harder: its
# mistakes hide behind others the catalogue has no fingerprint for (no biases, LayerNorm inside
# the module, per-head projections, ReLU after the projections, a crash without a mask). The grader
# names 58 of these 58 (it named 38 before those were given fingerprints of their own); the floor
# leaves a margin of two mistakes. Issue 12 asks for 90 % on its hidden published corpus.
# Issue 23 raised the floor to every one: 100 % of the catalogued mistakes in published code are named.
PUBLISHED_NAMED_FLOOR = 1.0


def test_accuracy_on_published_code(verdicts):
    text, stats = accuracy.table([v for v in verdicts.values() if v.entry.name.startswith("real_")])
    assert stats["false_fails"] == 0 and stats["false_passes"] == 0, text
    assert stats["precision"] >= 0.95, text
    assert stats["named_share"] >= PUBLISHED_NAMED_FLOOR, text


def test_published_lessons_07_08_are_covered():
    """At least 20 published implementations for lessons 07-08 (positional encodings, blocks, repeat_kv,
    KV caches), each naming its source repository, path and commit."""
    real = [e for e in ENTRIES if e.name.startswith("real_0") and e.lesson[:2] in ("07", "08")]
    assert len(real) >= 20, [e.name for e in real]
    for e in real:
        assert e.sources and all(len(s.split()) >= 3 and len(s.split()[-1]) == 40 for s in e.sources), e.name


# Code a feedback line must not put in the student's mouth unless the student wrote it
QUOTED = (".repeat(", "repeat_interleave", "is_causal", "np.where", "masked_fill", "expand(")


def test_in_your_code_quotes_only_the_students_code(verdicts):
    """An "In your code:" line describes what the code does; a call it names is one the code makes."""
    import re
    bad = []
    for v in verdicts.values():
        code = "".join(v.entry.cells.values())
        for said in re.findall(r"In your code: (.*?)\.(?: |$)", v.output, re.M):
            bad += [(v.entry.name, token, said) for token in QUOTED if token in said and token not in code]
    assert not bad, bad


def test_parse_several_expect_lines(tmp_path):
    path = tmp_path / "combo.py"
    path.write_text("# lesson: 05_multi_head_attention\n# source: a/b c.py 123\n"
                    "# expect: wrong MultiHeadAttention heads-mixed masked-row-nan\n"
                    "# expect: wrong split_heads -\n# %% split_heads\nx = 1\n")
    e = accuracy.parse(path)
    assert e.expect == "wrong" and e.sources == ["a/b c.py 123"]
    assert e.wrong == {"MultiHeadAttention": ["heads-mixed", "masked-row-nan"], "split_heads": []}
    assert e.mistakes == ["heads-mixed", "masked-row-nan"] and e.cells == {"split_heads": "x = 1\n"}


def test_precision_counts_wrong_names():
    e = accuracy.Entry("x", "05_multi_head_attention", "wrong", wrong={"MultiHeadAttention": ["heads-mixed"]})
    result = {"tests": [{"name": "05: a", "score": 0, "max_score": 1, "status": "failed", "output": "",
                         "tags": ["lesson:05_multi_head_attention", "exercise:MultiHeadAttention",
                                  "mistake:heads-mixed", "mistake:wrong-scale"]}]}
    v = accuracy.judge(e, result)
    assert v.ok and v.named and v.false_names == ["wrong-scale"]
    _, stats = accuracy.table([v])
    assert stats["precision"] == 0.5 and stats["named_share"] == 1.0
