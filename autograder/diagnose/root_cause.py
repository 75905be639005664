"""Diagnosis: the failures of one exercise, read together, root cause first.

Each check names what it found (compare.Mismatch.found: catalogue ids, each with the exact
variant in words). A student's mistake usually fails several checks; printing its paragraph
under each of them buries the cause. So, once every check of a lesson has run (plugin.py calls
`note` per check and `summarise` at the end), each exercise that lost points gets:

  * when every check raised NotImplementedError, one line: not started (NOT_STARTED);
  * otherwise one summary, at the start of its first failed check's output: every mistake found,
    in the lesson's own words, with the variant found in this code and the fix that applies;
  * under each failed check, only what it saw, after the ids of the mistakes that explain it
    (`[missing-scale] ...`), never the paragraph again;
  * a check that recognised nothing keeps its message and is marked as possibly following
    from the mistakes above.

The report (report/results.py) turns these into one line per check, merging checks that saw
the same thing, in the terminal, the self-check cells and feedback.md alike.

Every mistake found becomes a `mistake:<id>` tag of the check that found it.
"""
from __future__ import annotations

import re

from autograder.i18n import C_, N_
from autograder.diagnose.mistakes import CATALOGUE, LESSON_FIX, describe

# Lesson-specific wording: (mistake id, lesson prefix) -> (explanation or None, hint or None).
# Lessons 01-04 have no heads and no output projection; their messages must not talk about them.
_HEADS = ("05", "06")
LESSON_TEXT: dict[tuple[str, str], tuple[str | None, str | None]] = {}
# written out per output projection (no f-string: each is one message of the feedback catalog)
_ROW_NAN = {
    "w_o": C_("explanation", "When every key is blocked for a query, a -inf fill gives exp(-inf - (-inf)) = NaN in the "
              "softmax, and the NaN goes through every later step. The course asks for zero weights there, so that "
              "row's heads are zero and the module returns w_o's bias for it."),
    "o_project": C_("explanation", "When every key is blocked for a query, a -inf fill gives exp(-inf - (-inf)) = NaN in "
                    "the softmax, and the NaN goes through every later step. The course asks for zero weights there, so "
                    "that row's heads are zero and the module returns o_project's bias for it.")}
_ROW_LEAK = {
    "w_o": C_("explanation", "A finite fill gives a fully blocked row uniform weights over keys it may not read. The "
              "course asks for zero weights, so that row's heads are zero and the output is w_o's bias, not a mix of "
              "the values."),
    "o_project": C_("explanation", "A finite fill gives a fully blocked row uniform weights over keys it may not read. "
                    "The course asks for zero weights, so that row's heads are zero and the output is o_project's bias, "
                    "not a mix of the values.")}
for _l, _proj in (("05", "w_o"), ("06", "o_project")):
    LESSON_TEXT[("wrong-scale", _l)] = (
        C_("explanation", "Each head compares vectors of size d_k = d_model // num_heads, so that is the size to scale by, "
        "not d_model."),
        C_("hint", "Divide by `math.sqrt(self.d_k)`, with d_k = d_model // num_heads: the last dimension of q after "
        "the heads are split."))
    LESSON_TEXT[("missing-scale", _l)] = (
        None, C_("hint", "Divide the scores by `math.sqrt(self.d_k)` (d_k = d_model // num_heads, one head's size) "
        "before the softmax."))
    LESSON_TEXT[("masked-row-nan", _l)] = (
        _ROW_NAN[_proj],
        C_("hint", "After the softmax, set the weights of rows with no allowed key to zero, e.g. "
        "`weights.masked_fill(~allowed.any(-1, keepdim=True), 0.0)`."))
    LESSON_TEXT[("masked-row-leak", _l)] = (
        _ROW_LEAK[_proj],
        C_("hint", "Fill with -inf, then set the weights of rows with no allowed key to zero, e.g. "
        "`weights.masked_fill(~allowed.any(-1, keepdim=True), 0.0)`."))
for _l in ("01", "02"):
    LESSON_TEXT[("wrong-scale", _l)] = (
        C_("explanation", "The dot product of two vectors of size d_k (the queries' and keys' last axis, not the values' d_v) "
        "grows like sqrt(d_k), so dividing by exactly sqrt(d_k) keeps the scores' spread near 1; any other "
        "factor makes the softmax too flat or too peaked."), None)
LESSON_TEXT[("wrong-scale", "03")] = (
    C_("explanation", "The head's queries and keys have size d_k (the second argument of SelfAttentionHead), so that is the "
    "size to scale by, not d_model."),
    C_("hint", "Divide by `math.sqrt(d_k)`, where d_k = q.shape[-1] is the size of the projected queries."))
LESSON_TEXT[("wrong-scale", "04")] = (
    None, C_("hint", "Divide by `np.sqrt(D_K)`: D_K is the size of one head's query and key vectors (2 in the example)."))
LESSON_TEXT[("missing-scale", "04")] = (
    None, C_("hint", "Divide the scores `q @ k.T` by `np.sqrt(D_K)`, D_K being the size of one head's query and key "
          "vectors (2 in the example)."))
LESSON_TEXT[("missing-scale", "03")] = (
    None, C_("hint", "Divide the scores by `math.sqrt(d_k)`, where d_k = q.shape[-1] is the size of the projected queries, "
          "before the softmax."))
# the fix in each lesson's own names
LESSON_TEXT[("kv-reuse-query-projection", "03")] = (None, C_("hint", "Compute the keys with `self.w_k(x)` and the values "
                                                          "with `self.w_v(x)`; only the queries use `self.w_q`."))
LESSON_TEXT[("kv-reuse-query-projection", "05")] = (None, C_("hint", "Project each input with its own layer: `self.w_q(query)`, "
                                                          "`self.w_k(key)`, `self.w_v(value)`."))
LESSON_TEXT[("kv-reuse-query-projection", "06")] = (None, C_("hint", "Give each of q, k and v its own projection: "
                                                          "`self.q_project(x)`, `self.k_project(x)`, "
                                                          "`self.v_project(x)`."))
for _l in ("05", "08"):
    LESSON_TEXT[("missing-output-projection", _l)] = (
        None, C_("hint", "Pass the merged heads through the output projection: `return self.w_o(merged)`, not `merged`."))
LESSON_TEXT[("missing-output-projection", "06")] = (
    C_("explanation", "Without o_project the heads are never mixed: each output feature comes from a single head."),
    C_("hint", "Pass the merged heads through `self.o_project` before returning them."))


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


def _course_order(lesson: str, exercise: str) -> tuple[int, int]:
    """Where an exercise comes in the course (the order the report shows them in)."""
    from autograder.course import COURSE
    exercises = COURSE[lesson].exercises if lesson in COURSE else ()
    return list(COURSE).index(lesson) if lesson in COURSE else 99, \
        exercises.index(exercise) if exercise in exercises else 99


def _clauses(detail: str) -> list[str]:
    """A detail's clauses: split at ": " and "; ", but never inside parentheses (a clause kept alone
    must not leave a bracket open: "(head j holds head j // n_rep." was seen)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(detail):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and detail[i:i + 2] in (": ", "; "):
            out.append(detail[start:i])
            start = i + 2
    out.append(detail[start:])
    return [c for c in out if c]


def _shape_free(text: str) -> str:
    return re.sub(r"\(\d+(, \d+)*\)|\d+", "#", text)


NOT_STARTED = N_("not started: replace `raise NotImplementedError()` with your code")
MAY_FOLLOW = "(This may follow from "       # how a check no mistake explains ends, in results.json


def summary(lesson: str, exercise: str, found: list[tuple[str, str | None]], extra: list[str] = (),
            earlier: dict[str, str] | None = None) -> str:
    """The root causes of one exercise, each said once with its fix. Its first line is the short
    form (one line in the terminal, the self-check's first line); the rest say it in full:

        Root cause: <title> [<id>].                    Root causes (2 mistakes, fix each):
        In your code: <variant>. <explanation>         1. <title> [<id>]. In your code: ... <explanation>
        Fix: <hint in the lesson's own API>               Fix: <hint>
                                                       2. Not in the catalogue: <what the code does>.

    What the code does that the catalogue has no name for (extra) is numbered after the mistakes.
    A mistake an earlier exercise of the lesson already explained ({id: that exercise} in
    `earlier`; often the same helper, called by this exercise) is named with what this code does,
    and refers to that exercise for the explanation and the fix."""
    earlier = earlier or {}
    merged: dict[str, list[str]] = {}
    for mistake, detail in found:
        details = merged.setdefault(mistake, [])
        # one detail per variant: the same words with other shapes or sizes are not repeated, nor
        # a clause another check already said ("k_project is never used: the keys are computed
        # with q_project" after "the keys are computed with q_project instead of k_project")
        said = [_shape_free(c) for d in details for c in _clauses(d)]
        clauses, kept = _clauses(detail or ""), []
        for clause in clauses:
            if _shape_free(clause) not in " | ".join(said):
                kept.append(clause)
                said.append(_shape_free(clause))
        if kept:
            details.append(detail if len(kept) == len(clauses) else "; ".join(kept))
    extra = list(dict.fromkeys(extra))
    if len(merged) == 1 and not extra:
        (mistake, details), = merged.items()
        explanation, hint = _text(mistake, lesson)
        named = dict(title=CATALOGUE[mistake].title, id=mistake)
        if mistake in earlier:
            lines = [N_("Root cause: {title} [{id}], as in {exercise} above.").format(**named, exercise=earlier[mistake])]
            if details:
                lines.append(N_("In your code: {details}.").format(details="; ".join(details)))
            lines.append(N_("Fix: the same as for {exercise} above.").format(exercise=earlier[mistake]))
            return "\n".join(lines)
        said = (N_("In your code: {details}. {explanation}").format(details="; ".join(details), explanation=explanation)
                if details else explanation)
        return "\n".join([N_("Root cause: {title} [{id}].").format(**named), said, N_("Fix: {hint}").format(hint=hint)])
    if not merged and len(extra) == 1:
        upstream = re.search(r"fix (\w+) first$", extra[0])   # this exercise calls a wrong one above
        head = (N_("Root cause: what {name} returns: this exercise calls it.").format(name=upstream.group(1))
                if upstream else N_("Root cause: not one of the course's common mistakes."))
        return head + "\n" + N_("In your code: {details}.").format(details=extra[0])
    n = len(merged) + len(extra)
    lines = [(N_("Root causes ({n} mistakes, fix each):") if not extra else
              N_("Root causes ({n} problems, fix each):")).format(n=n)]
    for i, (mistake, details) in enumerate(merged.items(), 1):
        explanation, hint = _text(mistake, lesson)
        named = dict(i=i, title=CATALOGUE[mistake].title, id=mistake, details="; ".join(details))
        if mistake in earlier:
            lines.append((N_("{i}. {title} [{id}], as in {exercise} above. In your code: {details}.") if details else
                          N_("{i}. {title} [{id}], as in {exercise} above.")).format(**named, exercise=earlier[mistake]))
            lines.append("   " + N_("Fix: the same as for {exercise} above.").format(exercise=earlier[mistake]))
            continue
        lines.append((N_("{i}. {title} [{id}]. In your code: {details}. {explanation}") if details else
                      N_("{i}. {title} [{id}]. {explanation}")).format(**named, explanation=explanation))
        lines.append("   " + N_("Fix: {hint}").format(hint=hint))
    for i, d in enumerate(extra, len(merged) + 1):
        lines.append(N_("{i}. Not in the catalogue: {details}.").format(i=i, details=d))
    return "\n".join(lines)


def summarise(tests: list[dict]) -> None:
    """Rewrite the outputs of each exercise's failed checks so that nothing is said twice:

      * an exercise whose every check raised NotImplementedError: each check says NOT_STARTED;
      * otherwise its first failed check starts with the root causes and their fixes (summary());
        every failed check then gives what it saw, after the labels of the causes that explain it
        (`[missing-scale] the weights ... differ`); a check none explains ends with MAY_FOLLOW.
    A mistake an earlier exercise of the same lesson explained is not explained again (summary()).
    The report (report/results.py) reads these outputs back into one line per check."""
    explained: dict[str, dict[str, str]] = {}       # lesson -> {mistake id: exercise that explained it}
    for (lesson, exercise), entries in sorted(_group(tests).items(), key=lambda kv: _course_order(*kv[0])):
        earlier = explained.setdefault(lesson, {})
        failed = [t for t in entries if t.get("status") != "passed"]
        found = [f for t in failed for f in t.get("_found", [])]
        extra = list(dict.fromkeys(d for t in failed for d in t.get("_extra", [])))
        if failed and len(failed) == len(entries) and not extra and all(
                t.get("_found") and {m for m, _ in t["_found"]} == {"not-implemented"} for t in failed):
            for t in failed:
                t["output"] = NOT_STARTED
            earlier.setdefault("not-implemented", exercise)
        elif found or extra:
            order = list(dict.fromkeys(m for m, _ in found))     # the summary's numbering
            causes = order + [N_("point {n}").format(n=len(order) + i) for i in range(1, len(extra) + 1)]
            head = summary(lesson, exercise, found, extra, earlier)
            for mistake in order:
                earlier.setdefault(mistake, exercise)
            first = True
            for t in failed:
                if "_found" in t:
                    ids = list(dict.fromkeys(m for m, _ in t["_found"]))
                    labels = ids + [causes[len(order) + extra.index(d)] for d in t.get("_extra", [])]
                    body = N_("[{labels}] {evidence}").format(labels=", ".join(labels), evidence=t["_line"])
                else:
                    body = t["output"] + "\n" + (N_("(This may follow from {follows}; fix them first.)") if len(causes) > 1
                                                else N_("(This may follow from {follows}; fix it first.)")).format(
                        follows=" and ".join(causes))
                t["output"] = (head + "\n\n" + body) if first else body
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


_LABELS = re.compile(r"\[((?:[a-z0-9-]+|point \d+)(?:, (?:[a-z0-9-]+|point \d+))*)\] ")


def own_part(output: str) -> tuple[list[str] | None, str, bool]:
    """A failed check's own part, read back: (the labels of the causes that explain it, or None;
    what it saw; whether it is a check no named cause explains)."""
    _, body = split_summary(output)
    labels = None
    m = _LABELS.match(body)
    if m:
        labels, body = m.group(1).split(", "), body[m.end():]
    lines = body.split("\n")
    unexplained = labels is None and len(lines) > 1 and lines[-1].startswith(MAY_FOLLOW)
    if unexplained:
        body = "\n".join(lines[:-1])
    return labels, body, unexplained
