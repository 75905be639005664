"""Report: the terminal summary and the files (results.json, feedback) of a grading run."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from autograder.course import COURSE


def by_exercise(results: dict) -> dict[tuple[str, str], dict]:
    """{(lesson, exercise): {"score", "max", "failed": [tests]}} in course order."""
    out: dict[tuple[str, str], dict] = {}
    for test in results.get("tests", []):
        tags = test.get("tags", [])
        lesson = next((t[7:] for t in tags if t.startswith("lesson:")), "?")
        exercise = next((t[9:] for t in tags if t.startswith("exercise:")), "?")
        entry = out.setdefault((lesson, exercise), {"score": 0.0, "max": 0.0, "failed": []})
        entry["score"] += test["score"]
        entry["max"] += test["max_score"]
        if test["status"] != "passed":
            entry["failed"].append(test)
    order = {lid: i for i, lid in enumerate(COURSE)}
    return dict(sorted(out.items(), key=lambda kv: (order.get(kv[0][0], 99),
                                                    _exercise_index(*kv[0]))))


def _exercise_index(lesson: str, exercise: str) -> int:
    exercises = COURSE[lesson].exercises if lesson in COURSE else ()
    return exercises.index(exercise) if exercise in exercises else 99


def mistake_of(test: dict) -> str | None:
    return next((t[8:] for t in test.get("tags", []) if t.startswith("mistake:")), None)


def mistakes_of(test: dict) -> list[str]:
    """Every mistake a test entry names (an entry may carry several mistake: tags)."""
    return [t[8:] for t in test.get("tags", []) if t.startswith("mistake:")]


def reason(entry: dict) -> str:
    """One short line: why the exercise lost points."""
    if not entry["failed"]:
        return "all checks passed"
    first = entry["failed"][0]
    mistake = mistake_of(first)
    line = next((ln for ln in first.get("output", "").splitlines() if ln.strip()), "failed")
    if mistake == "not-implemented":
        return "not implemented yet: replace `raise NotImplementedError()` with your code"
    if len(line) > 110:
        line = line[:107] + "..."
    tag = f"[{mistake}] " if mistake else ""
    more = f" (+{len(entry['failed']) - 1} more failed checks)" if len(entry["failed"]) > 1 else ""
    return f"{tag}{line}{more}"


def _pts(x: float) -> str:
    return f"{x:g}"


def summary(results: dict, title: str | None = None, *, detail: bool = False) -> str:
    """Per exercise, points and a short reason; with `detail`, each exercise that lost points is
    followed by the text its self-check cell shows (root cause, named mistakes, the fix, and
    what each failing check saw)."""
    lines = []
    if title:
        lines.append(title)
    current = None
    for (lesson, exercise), entry in by_exercise(results).items():
        if lesson != current:
            current = lesson
            lines.append(f"  {lesson}")
        lines.append(f"    {exercise:<30} {_pts(entry['score']):>4}/{_pts(entry['max']):<4} {reason(entry)}")
        if detail and entry["failed"]:
            tests = [t for t in results.get("tests", [])
                     if f"lesson:{lesson}" in t.get("tags", ()) and f"exercise:{exercise}" in t.get("tags", ())]
            lines.extend("        " + ln if ln else "" for ln in verdict(exercise, tests).splitlines()[1:])
            lines.append("")
    for note in results.get("output", "").splitlines():
        lines.append(f"  note: {note}")
    lines.append(f"  total {_pts(results['score'])}/{_pts(results['max_score'])}")
    return "\n".join(lines)


def feedback_markdown(student: str, results: dict) -> str:
    """A page a student can read: per exercise, points, what went wrong, the named mistake.

    Every text a student can influence (the folder name, notes about their files, a check's output
    with their exception messages) is escaped: outside code blocks each ASCII punctuation character
    is backslash-escaped (no markup, no raw HTML), and a code block's fence is longer than any run
    of backticks inside it, so no line of the text can close it."""
    lines = [f"# Feedback for {markdown_text(student)}", "",
             f"**Score: {_pts(results['score'])} / {_pts(results['max_score'])}**", ""]
    if results.get("output"):
        lines += ["Notes about your files:", ""] + [f"- {markdown_text(n)}" for n in results["output"].splitlines()] + [""]
    current = None
    for (lesson, exercise), entry in by_exercise(results).items():
        if lesson != current:
            current = lesson
            lines += [f"## {markdown_text(lesson)}", ""]
        lines += [f"### {markdown_text(exercise)}: {_pts(entry['score'])} / {_pts(entry['max'])}", ""]
        if not entry["failed"]:
            lines += ["All checks passed.", ""]
        for test in entry["failed"]:
            mistake = mistake_of(test)
            lines.append(f"- **{markdown_text(test['name'].split(': ', 1)[-1])}**"
                         + (f" (mistake: {markdown_text(mistake)})" if mistake else ""))
            lines += [""] + ["  " + ln for ln in code_block(test["output"]).splitlines()] + [""]
    return "\n".join(lines) + "\n"


_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text) -> str:
    """`text` as literal Markdown inline text: every ASCII punctuation character backslash-escaped
    (CommonMark and mistune read `\\<` as `<`, never as the start of a tag), line breaks as spaces,
    control characters made visible."""
    flat = " ".join(terminal_safe(str(text)).splitlines())
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", flat)


def code_block(text, info: str = "text") -> str:
    """`text` in a fenced code block that nothing in it can close: the fence is one backtick longer
    than the longest run of backticks in the text (CommonMark: a closing fence is at least as long
    as the opening one), and control characters are made visible."""
    body = terminal_safe(str(text))
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence + info, *body.splitlines(), fence])


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f]}
_CONTROL.update({c: f"\\x{c:02x}" for c in range(0x80, 0xa0)})
# bidirectional overrides and isolates reorder what a terminal shows (a name like "eve\u202e8-8")
_CONTROL.update({c: f"\\u{c:04x}" for c in [0x200e, 0x200f, *range(0x202a, 0x202f), *range(0x2066, 0x206a)]})


def terminal_safe(text: str) -> str:
    """Escape control characters (terminal escape codes in a file name or in a student's
    exception message), keeping line breaks and tabs."""
    return str(text).translate(_CONTROL)


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file so that it is either the old one or the whole new one, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def verdict(exercise: str, tests: list[dict]) -> str:
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    if not tests:
        return f"{exercise}: no checks found for this exercise"
    if score == total:
        if len(tests) == 1:  # "all 1 checks" is not English
            return f"{exercise}: passed all checks (1 of 1; {score:g}/{total:g} points)."
        return f"{exercise}: passed all {len(tests)} checks ({score:g}/{total:g} points)."
    from autograder.diagnose.root_cause import split_summary
    lines = [f"{exercise}: {score:g}/{total:g} points"]
    for t in tests:   # the root-cause summary first, in full
        found, _ = split_summary(t["output"]) if t["status"] != "passed" else (None, "")
        if found:
            lines.extend("  " + line for line in found.splitlines())
            lines.append("")
    for t in tests:
        name = t["name"].split(": ", 1)[-1]
        if t["status"] == "passed":
            lines.append(f"  passed  {name}")
        else:
            mistakes = [tag[8:] for tag in t["tags"] if tag.startswith("mistake:")]
            lines.append(f"  FAILED  {name}" + (f"  [{', '.join(mistakes)}]" if mistakes else ""))
            lines.extend("          " + line for line in split_summary(t["output"])[1].splitlines()[:8])
    return "\n".join(lines)
