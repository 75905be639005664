"""Report: the terminal summary and the files (results.json, feedback) of a grading run."""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from autograder.course import COURSE
from autograder.run.bounds import CHECK_OUTPUT, clip

# The final guard on what one student's reports can weigh, whatever got past the cuts where the
# child's texts enter the grader (run/bounds.py). An honest student's results.json is ~12 KB, its
# feedback ~4 KB, its terminal lines ~1 KB a lesson; each limit is far above that and far below 1 MB.
RESULTS_BYTES = 400_000    # results.json as JSON (feedback.md says each output about twice)
FEEDBACK_BYTES = 900_000
NOTES = 20_000             # characters of notes about the files
TERMINAL_LINE = 1000       # characters of one line of the terminal summary
TERMINAL_EXERCISE = 8000   # characters of the lines under one exercise in the terminal


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
    """One short line: why the exercise lost points (--brief, the class report)."""
    if not entry["failed"]:
        return "all checks passed"
    from autograder.diagnose.mistakes import CATALOGUE
    from autograder.diagnose.root_cause import NOT_STARTED, split_summary
    if _not_started(entry["failed"], entry["failed"]):
        return NOT_STARTED
    more = f" ({len(entry['failed'])} failed checks)" if len(entry["failed"]) > 1 else ""
    head = next((h for h in (split_summary(t.get("output", ""))[0] for t in entry["failed"]) if h), None)
    if head:
        first = head.splitlines()[0]
        if not first.endswith(":"):            # one root cause: its own line
            return first + more
        ids = list(dict.fromkeys(m for t in entry["failed"] for m in mistakes_of(t) if m in CATALOGUE))
        return "Root causes: " + "; ".join(f"{CATALOGUE[m].title} [{m}]" for m in ids) + "." + more
    first = entry["failed"][0]
    mistake = mistake_of(first)
    line = _one_line(first.get("output", "")) or "failed"
    if len(line) > 110:
        line = line[:107] + "..."
    tag = f"[{mistake}] " if mistake else ""
    more = f" (+{len(entry['failed']) - 1} more failed checks)" if len(entry["failed"]) > 1 else ""
    return f"{tag}{line}{more}"


def _not_started(tests: list[dict], failed: list[dict]) -> bool:
    """Every check of the exercise failed because the stub still raises NotImplementedError."""
    return bool(tests) and len(failed) == len(tests) and all(
        set(mistakes_of(t)) == {"not-implemented"} for t in tests)


def _one_line(evidence: str) -> str:
    """What a check saw, on one line: its first line; for an exception, its type and message and
    where in the student's cell it was raised."""
    import re
    lines = [ln for ln in evidence.splitlines() if ln.strip()]
    if not lines:
        return ""
    line = lines[0].strip()
    if line.endswith(":") and len(lines) > 1:          # "softmax raised an exception:" + the error
        line = f"{line} {lines[1].strip()}"
        where = [i for i, ln in enumerate(lines[2:], 2) if re.match(r"\s+cell .*, line \d+", ln)]
        if where:
            i = where[-1]
            place = lines[i].strip().split(", in ")[0]
            code = lines[i + 1].strip() if i + 1 < len(lines) and not re.match(
                r"\s+cell .*, line \d+", lines[i + 1]) else ""
            line += f" (at {place}" + (f": `{code}`" if code else "") + ")"
    elif len(lines) > 1:
        line += f" (+{len(lines) - 1} more; --verbose shows {'it' if len(lines) == 2 else 'them'})"
    return line


def _pts(x: float) -> str:
    return f"{x:g}"


def summary(results: dict, title: str | None = None, *, detail: bool = False, verbose: bool = False) -> str:
    """Per exercise, points and a short reason. With `detail`, an exercise that lost points is
    followed by the rest of what its self-check cell shows (the root cause said once, its fix,
    one line per failed check); with `verbose`, by every check and everything it saw."""
    lines = []
    if title:
        lines.append(title)
    from autograder.diagnose.root_cause import NOT_STARTED
    current = None
    entries = by_exercise(results)
    untouched = {lesson for lesson, _ in entries} - {        # lessons none of whose exercises is started
        lesson for (lesson, exercise), entry in entries.items()
        if not _not_started(_tests_of(results, lesson, exercise), entry["failed"])}
    for (lesson, exercise), entry in entries.items():
        if lesson in untouched and not verbose:      # a lesson not started at all is one line
            if lesson != current:
                current = lesson
                score = sum(e["score"] for (l, _), e in entries.items() if l == lesson)
                total = sum(e["max"] for (l, _), e in entries.items() if l == lesson)
                names = ", ".join(e for (l, e) in entries if l == lesson)
                lines.append(f"  {lesson:<34} {_pts(score):>2}/{_pts(total):<4} {NOT_STARTED} in {names}")
            continue
        if lesson != current:
            current = lesson
            lines.append(f"  {lesson}")
        head, body = (exercise_report(_tests_of(results, lesson, exercise), verbose=verbose)
                      if detail or verbose else (reason(entry), []))
        lines.append(clip(f"    {exercise:<30} {_pts(entry['score']):>4}/{_pts(entry['max']):<4} {head}",
                          TERMINAL_LINE))
        if body:
            lines.extend(_terminal_block(["        " + ln if ln else "" for ln in body]))
            lines.append("")
    for note in results.get("output", "").splitlines():
        lines.append(clip(f"  note: {note}", TERMINAL_LINE))
    lines.append(f"  total {_pts(results['score'])}/{_pts(results['max_score'])}")
    return "\n".join(lines)


def _terminal_block(lines: list[str]) -> list[str]:
    """An exercise's lines for the terminal: each cut to TERMINAL_LINE, and all of them to about
    TERMINAL_EXERCISE characters (what a check saw can be long; the feedback file has it)."""
    out, size = [], 0
    for i, line in enumerate(lines):
        if size > TERMINAL_EXERCISE:
            out.append(f"        ... {len(lines) - i} more lines (the feedback file has them)")
            break
        out.append(clip(line, TERMINAL_LINE))
        size += len(out[-1])
    return out


def _tests_of(results: dict, lesson: str, exercise: str) -> list[dict]:
    return [t for t in results.get("tests", [])
            if f"lesson:{lesson}" in t.get("tags", ()) and f"exercise:{exercise}" in t.get("tags", ())]


def _short_name(test: dict) -> str:
    return test["name"].split(": ", 1)[-1]


def exercise_report(tests: list[dict], *, verbose: bool = False) -> tuple[str, list[str]]:
    """(one line, the lines after it) for one exercise's checks: what the terminal, the
    self-check cell and feedback.md show. Nothing is said twice: the root cause and its fix once,
    then one line per failed check (name: what it saw), checks that saw the same thing merged.
    `verbose`: every check, passed ones too, and all that each saw."""
    head, cause, checks = _exercise_parts(tests, verbose)
    return head, cause + checks


def passed_notes(tests: list[dict]) -> list[str]:
    """What passed checks said (an exercise graded with the reference in place of a wrong one it
    calls), each sentence once."""
    return list(dict.fromkeys(ln for t in tests if t["status"] == "passed" for ln in t.get("output", "").splitlines()
                              if ln.strip()))


def _exercise_parts(tests: list[dict], verbose: bool) -> tuple[str, list[str], list[str]]:
    """(one line, the rest of the root cause and its fix, the lines about the checks)."""
    from autograder.diagnose.root_cause import NOT_STARTED, own_part, split_summary
    failed = [t for t in tests if t["status"] != "passed"]
    if not failed:
        return "all checks passed", passed_notes(tests), []
    if _not_started(tests, failed):
        return NOT_STARTED, [], ([f"FAILED  {_short_name(t)}" for t in tests] if verbose else [])
    block = next((h for h in (split_summary(t["output"])[0] for t in failed) if h), None)
    parts = [(t, *own_part(t["output"])) for t in failed] if block else \
            [(t, None, t["output"], False) for t in failed]
    causes = {label for _, labels, _, _ in parts for label in labels or ()}
    groups: dict[tuple, list[dict]] = {}       # checks that saw the same thing, in order
    for t, labels, evidence, unexplained in parts:
        groups.setdefault((unexplained, tuple(labels or ()), evidence.strip()), []).append(t)

    def check_lines(key, group) -> list[str]:
        _, labels, evidence = key
        tag = f" [{', '.join(labels)}]" if labels and len(causes) > 1 else ""
        if verbose:
            return [f"FAILED  {_short_name(t)}{tag}" for t in group] + \
                   ["        " + ln for ln in evidence.splitlines()]
        names = f"all {len(group)} checks" if len(group) == len(tests) > 1 else "; ".join(map(_short_name, group))
        return [f"FAILED  {names}{tag}: {_one_line(evidence)}"]

    cause: list[str] = []
    if block:
        head, *cause = block.splitlines()
    elif len(groups) == 1 and len(failed) == len(tests) and not verbose:
        (key, group), = groups.items()        # every check failed the same way: say it once
        return _one_line(key[2]), [], []
    else:
        head = f"{len(failed)} of {len(tests)} checks failed"
    lines: list[str] = []
    ordered = sorted(groups.items(), key=lambda kv: kv[0][0])        # explained ones first
    for i, (key, group) in enumerate(ordered):
        if key[0] and (i == 0 or not ordered[i - 1][0][0]):
            many = len(causes) > 1
            lines.append(f"Also failing, maybe because of the mistake{'s' if many else ''} above "
                         f"(fix {'them' if many else 'it'} first):")
        lines.extend(check_lines(key, group))
    if verbose:
        lines.extend(f"passed  {_short_name(t)}" for t in tests if t["status"] == "passed")
    return head, cause, lines


def feedback_markdown(student: str, results: dict) -> str:
    """A page a student can read: per exercise, points and the same text as the self-check (the
    root cause and its fix once, one line per failed check); every check in full at the end.

    Every text a student can influence (the folder name, notes about their files, a check's output
    with their exception messages) is escaped: outside code blocks each ASCII punctuation character
    is backslash-escaped (no markup, no raw HTML), and a code block's fence is longer than any run
    of backticks inside it, so no line of the text can close it."""
    lines = [f"# Feedback for {markdown_text(student)}", "",
             f"**Score: {_pts(results['score'])} / {_pts(results['max_score'])}**", ""]
    if results.get("output"):
        lines += ["Notes about your files:", ""] + [f"- {markdown_text(n)}" for n in results["output"].splitlines()] + [""]
    from autograder.diagnose.root_cause import NOT_STARTED
    current, full = None, []
    for (lesson, exercise), entry in by_exercise(results).items():
        if lesson != current:
            current = lesson
            lines += ([""] if lines[-1] else []) + [f"## {markdown_text(lesson)}", ""]
        tests = _tests_of(results, lesson, exercise)
        points = f"**{markdown_text(exercise)}**: {_pts(entry['score'])} / {_pts(entry['max'])}"
        head, body = exercise_report(tests)
        if not entry["failed"] or head == NOT_STARTED:
            lines.append(f"- {points}, {markdown_text(head)}.")
            continue
        lines += [f"- {points}", ""] + [f"  {ln}" for ln in code_block("\n".join([head, *body])).splitlines()] + [""]
        full.append((lesson, exercise, tests))
    page = "\n".join(lines).rstrip("\n") + "\n"
    if full:
        appendix = ["", "## Every check in full", ""]
        for lesson, exercise, tests in full:
            _, _, checks = _exercise_parts(tests, verbose=True)    # the root cause is said above
            appendix += [f"### {markdown_text(lesson)}: {markdown_text(exercise)}", "", code_block("\n".join(checks)), ""]
        whole = page + "\n".join(appendix).rstrip("\n") + "\n"
        page = whole if len(whole.encode()) <= FEEDBACK_BYTES else page + (
            "\n## Every check in full\n\nNot shown: it is longer than the grader writes here. "
            "results.json holds what each check saw.\n")
    return _cut_page(page)


def _cut_page(page: str) -> str:
    """The final guard on feedback.md: a page over FEEDBACK_BYTES ends where it is cut, and says so
    (results.json is bounded, so an honest page never comes near)."""
    if len(page.encode()) <= FEEDBACK_BYTES:
        return page
    head = page.encode()[:FEEDBACK_BYTES - 1000].decode("utf-8", "ignore")
    return head + "\n\n(This page was cut here: it is longer than the grader writes. results.json holds the rest.)\n"


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


def write_results(path: Path, result: dict) -> None:
    """One student's results.json, within RESULTS_BYTES whatever it holds (bounded)."""
    write_json(path, bounded(result))


def bounded(answer: dict) -> dict:
    """`answer` (a results object) with each check's output and the notes cut so that the whole
    object, as JSON, weighs under RESULTS_BYTES: the cuts halve until it does (a non-ASCII character
    costs up to 12 bytes of JSON). Cuts from the texts as they came, so a second call changes
    nothing more."""
    tests = [t for t in answer.get("tests", []) if isinstance(t, dict)]
    outputs = [str(t.get("output", "")) for t in tests]
    notes = str(answer["output"]) if "output" in answer else None
    limit, notes_limit = CHECK_OUTPUT, NOTES
    while True:
        for test, text in zip(tests, outputs):
            test["output"] = clip(text, limit)
        if notes is not None:
            answer["output"] = clip(notes, notes_limit)
        if limit < 100 or len(json.dumps(answer, indent=2)) <= RESULTS_BYTES:
            return answer
        limit, notes_limit = limit // 2, notes_limit // 2


def verdict(exercise: str, tests: list[dict], *, verbose: bool = False) -> str:
    """What a self-check cell prints: the points and, when some were lost, the same text as the
    terminal (exercise_report)."""
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    if not tests:
        return f"{exercise}: no checks found for this exercise"
    if score == total:
        notes = "".join(f"\n  {n}" for n in passed_notes(tests))
        if len(tests) == 1:  # "all 1 checks" is not English
            return f"{exercise}: passed all checks (1 of 1; {score:g}/{total:g} points).{notes}"
        return f"{exercise}: passed all {len(tests)} checks ({score:g}/{total:g} points).{notes}"
    head, body = exercise_report(tests, verbose=verbose)
    lines = [f"{exercise}: {score:g}/{total:g} points. {head[:1].upper()}{head[1:]}"]
    lines.extend("  " + line for line in body)
    return "\n".join(lines)


def sandbox_line(layers: list[str], verbose: bool = False) -> str:
    """The first line of a grade: the sandbox's layers. In full with --verbose; otherwise each layer's
    name only (what it holds is in `python -m autograder doctor`), so a student's results are not
    pushed down by a paragraph of isolation terms. A layer that is missing ("NO Landlock") still shows."""
    if verbose:
        return "sandbox: " + "; ".join(layers)
    names = [re.split(r" \(|: ", layer, maxsplit=1)[0] for layer in layers]
    return "sandbox: " + "; ".join(names) + " (--verbose says what each holds)"

