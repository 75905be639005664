"""Diagnosis: the failures of one exercise, read together, root cause first.

Each check names what it found (compare.Mismatch.found: catalogue ids, each with the exact
variant in words). A student's mistake usually fails several checks; printing its paragraph
under each of them buries the cause. So, once every check of a lesson has run (plugin.py calls
`note` per check and `summarise` at the end), each exercise that lost points gets:

  * one summary, at the start of its first failed check's output: every mistake found, in the
    lesson's own words, with the variant found in this code and the fix that applies;
  * under each failed check, its own one-line finding and, instead of the paragraph again,
    "fails because of <the mistake> above";
  * a check that recognised nothing keeps its message and is marked as possibly following
    from the mistakes above.

Every mistake found becomes a `mistake:<id>` tag of the check that found it.
"""
from __future__ import annotations

import re

from autograder.diagnose.mistakes import CATALOGUE, LESSON_FIX, describe

# Lesson-specific wording: (mistake id, lesson prefix) -> (explanation or None, hint or None).
# Lessons 01-04 have no heads and no output projection; their messages must not talk about them.
_HEADS = ("05", "06")
LESSON_TEXT: dict[tuple[str, str], tuple[str | None, str | None]] = {}
for _l, _proj in (("05", "w_o"), ("06", "o_project")):
    LESSON_TEXT[("wrong-scale", _l)] = (
        "The scores are divided by the wrong amount. Each head compares vectors of size d_k = d_model // "
        "num_heads, so that is the size to scale by, not d_model.",
        "Divide by `math.sqrt(self.d_k)`, with d_k = d_model // num_heads: the last dimension of q after "
        "the heads are split.")
    LESSON_TEXT[("missing-scale", _l)] = (
        None, "Divide the scores by `math.sqrt(self.d_k)` (d_k = d_model // num_heads, one head's size) "
        "before the softmax.")
    LESSON_TEXT[("masked-row-nan", _l)] = (
        "When every key is blocked for a query, a -inf fill gives exp(-inf - (-inf)) = NaN in the softmax, "
        "and the NaN goes through every later step. The course asks for zero weights there, so that row's "
        f"heads are zero and the module returns {_proj}'s bias for it.",
        "After the softmax, set the weights of rows with no allowed key to zero, e.g. "
        "`weights.masked_fill(~allowed.any(-1, keepdim=True), 0.0)`.")
    LESSON_TEXT[("masked-row-leak", _l)] = (
        "With a large negative fill such as -1e9 a fully blocked row gets uniform weights over keys it may "
        f"not read. The course asks for zero weights, so that row's heads are zero and the output is {_proj}'s "
        "bias, not a mix of the values.",
        "Fill with -inf, then set the weights of rows with no allowed key to zero.")
for _l in ("01", "02"):
    LESSON_TEXT[("wrong-scale", _l)] = (
        "The scores are divided by the wrong amount: by d_k instead of sqrt(d_k), by the square root of "
        "another size (such as d_v, the size of the values), or multiplied instead of divided.", None)
LESSON_TEXT[("wrong-scale", "03")] = (
    "The scores are divided by the wrong amount. The head's queries and keys have size d_k (the second "
    "argument of SelfAttentionHead), so that is the size to scale by, not d_model.",
    "Divide by `math.sqrt(d_k)`, where d_k = q.shape[-1] is the size of the projected queries.")
LESSON_TEXT[("wrong-scale", "04")] = (
    None, "Divide by `np.sqrt(D_K)`: D_K is the size of one head's query and key vectors (2 in the example).")


def _text(mistake: str, lesson: str) -> tuple[str, str]:
    m = CATALOGUE[mistake]
    explanation, hint = LESSON_TEXT.get((mistake, lesson[:2])) or LESSON_FIX.get((mistake, lesson[:2]), (None, None))
    return explanation or m.explanation, hint or m.hint


def note(entry: dict, exc: BaseException | None) -> None:
    """Called for each recorded check: keep what its failure found, and tag every mistake."""
    if exc is None:
        return
    found = list(getattr(exc, "found", None) or [])
    if not found:   # failures explained outside compare (stub, signature, time limit...): one id
        found = [(t[8:], None) for t in entry["tags"] if t.startswith("mistake:")]
    for mistake, _ in found:
        tag = f"mistake:{mistake}"
        if tag not in entry["tags"]:
            entry["tags"].append(tag)
    extra = list(getattr(exc, "extra", None) or [])
    if (found or extra) and all(m in CATALOGUE for m, _ in found):
        entry["_found"] = found
        line = getattr(exc, "line", None)
        if line is None:   # explain_failure's text: drop the catalogue paragraph, the summary has it
            line = entry["output"]
            for mistake, _ in found:
                line = line.replace(describe(mistake), "")
            line = line.strip() or "this check failed"
        for d in extra:    # said once, in the summary
            line = line.replace(f"\nAlso, {d}.", "")
        entry["_line"] = line
        entry["_extra"] = extra


def _group(tests: list[dict]) -> dict[tuple[str, str], list[dict]]:
    out: dict[tuple[str, str], list[dict]] = {}
    for t in tests:
        tags = t.get("tags", [])
        lesson = next((x[7:] for x in tags if x.startswith("lesson:")), "?")
        exercise = next((x[9:] for x in tags if x.startswith("exercise:")), "?")
        out.setdefault((lesson, exercise), []).append(t)
    return out


def _shape_free(text: str) -> str:
    return re.sub(r"\(\d+(, \d+)*\)|\d+", "#", text)


def summary(lesson: str, exercise: str, found: list[tuple[str, str | None]], extra: list[str] = ()) -> str:
    """The root causes of one exercise: one paragraph per mistake, and its fix; then what the code
    does that the catalogue has no name for (extra), numbered after them."""
    merged: dict[str, list[str]] = {}
    for mistake, detail in found:
        details = merged.setdefault(mistake, [])
        # one detail per variant: the same words with other shapes or sizes are not repeated
        if detail and _shape_free(detail) not in {_shape_free(d) for d in details}:
            details.append(detail)
    titles = [CATALOGUE[m].title for m in merged]
    if not merged:
        head = f"Root cause in {exercise}: something the catalogue of common mistakes has no name for."
    elif len(merged) == 1:
        head = f"Root cause in {exercise}: {titles[0]} [{next(iter(merged))}]."
    else:
        head = (f"Root causes in {exercise} ({len(merged)} mistakes, fix each): "
                + "; ".join(f"{t} [{m}]" for t, m in zip(titles, merged)) + ".")
    if merged and extra:
        head += " Also a change the catalogue has no name for (see below)."
    lines = [head]
    for i, (mistake, details) in enumerate(merged.items(), 1):
        explanation, hint = _text(mistake, lesson)
        where = f" In your code: {'; '.join(details)}." if details else ""
        lines.append(f"{i}. {CATALOGUE[mistake].title} ({mistake}).{where} {explanation}")
        lines.append(f"   Fix: {hint}")
    for i, d in enumerate(dict.fromkeys(extra), len(merged) + 1):
        lines.append(f"{i}. Not in the catalogue: {d}.")
    return "\n".join(lines)


def summarise(tests: list[dict]) -> None:
    """Rewrite the outputs of each exercise's failed checks: summary first, no paragraph twice."""
    for (lesson, exercise), entries in _group(tests).items():
        failed = [t for t in entries if t.get("status") != "passed"]
        found = [f for t in failed for f in t.get("_found", [])]
        extra = list(dict.fromkeys(d for t in failed for d in t.get("_extra", [])))
        if found or extra:
            order = list(dict.fromkeys(m for m, _ in found))     # the summary's numbering
            n = len(order) + len(extra)
            first = True
            for t in failed:
                if "_found" in t:
                    ids = list(dict.fromkeys(m for m, _ in t["_found"]))
                    causes = [f"mistake {order.index(m) + 1} above ({m})" for m in ids]
                    causes += [f"point {len(order) + extra.index(d) + 1} above" for d in t.get("_extra", [])]
                    body = f"{t['_line']}\nThis check fails because of {' and '.join(causes)}."
                else:
                    body = (f"{t['output']}\n(This may follow from the mistake{'s' if n > 1 else ''} "
                            f"above; fix {'them' if n > 1 else 'it'} first.)")
                t["output"] = (summary(lesson, exercise, found, extra) + "\n\n" + body) if first else body
                first = False
        for t in entries:
            t.pop("_found", None)
            t.pop("_line", None)
            t.pop("_extra", None)


def split_summary(output: str) -> tuple[str | None, str]:
    """(the exercise's summary, or None; the check's own part) of a failed check's output."""
    if output.startswith("Root cause") and "\n\n" in output:
        head, body = output.split("\n\n", 1)
        return head, body
    return None, output
