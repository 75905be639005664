"""Report: the terminal summary and the files (results.json, feedback) of a grading run."""
from __future__ import annotations

import re

from autograder.course import COURSE
from autograder.i18n import N_, gettext_, language, localize
from autograder.report.files import (RESULTS_BYTES, bounded, localized, write_atomic, write_json,  # noqa: F401 (re-exported)
                                     write_results)
from autograder.run.bounds import clip

# The final guard on what one student's reports can weigh, whatever got past the cuts where the
# child's texts enter the grader (run/bounds.py). An honest student's results.json is ~12 KB, its
# feedback ~4 KB, its terminal lines ~1 KB a lesson; each limit is far above that and far below 1 MB.
FEEDBACK_BYTES = 900_000   # feedback.md (results.json's bounds: files.py)
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


def reason(entry: dict, lang: str | None = None) -> str:
    """One short line: why the exercise lost points (--brief, the class report), in `lang`."""
    lang = language(lang)
    return localize(_reason(entry, lang), lang)


def _reason(entry: dict, lang: str | None = None) -> str:
    if not entry["failed"]:
        return N_("all checks passed")
    from autograder.diagnose.mistakes import CATALOGUE
    from autograder.diagnose.root_cause import NOT_STARTED, split_summary
    if _not_started(entry["failed"], entry["failed"]):
        return NOT_STARTED
    many = len(entry["failed"]) > 1
    head = next((h for h in (split_summary(t.get("output", ""))[0] for t in entry["failed"]) if h), None)
    if head:
        first = head.splitlines()[0]
        if not first.endswith(":"):            # one root cause: its own line
            return N_("{line} ({n} failed checks)").format(line=first, n=len(entry["failed"])) if many else first
        ids = list(dict.fromkeys(m for t in entry["failed"] for m in mistakes_of(t) if m in CATALOGUE))
        causes = N_("Root causes: {causes}.").format(
            causes="; ".join(N_("{title} [{id}]").format(title=CATALOGUE[m].title, id=m) for m in ids))
        return N_("{line} ({n} failed checks)").format(line=causes, n=len(entry["failed"])) if many else causes
    first = entry["failed"][0]
    mistake = mistake_of(first)
    line = localize(_one_line(first.get("output", "")), lang) or N_("failed")   # translated whole, then cut
    if len(line) > 110:
        line = line[:107] + "..."
    if mistake:
        line = N_("[{labels}] {evidence}").format(labels=mistake, evidence=line)
    if len(entry["failed"]) > 1:
        line = N_("{line} (+{n} more failed checks)").format(line=line, n=len(entry["failed"]) - 1)
    return line


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
            line = (N_("{evidence} (at {place}: `{code}`)") if code else N_("{evidence} (at {place})")).format(
                evidence=line, place=place, code=code)
    elif len(lines) > 1:
        line = (N_("{evidence} (+{n} more; --verbose shows it)") if len(lines) == 2 else
                N_("{evidence} (+{n} more; --verbose shows them)")).format(evidence=line, n=len(lines) - 1)
    return line


def _pts(x: float) -> str:
    return f"{x:g}"


def summary(results: dict, title: str | None = None, *, detail: bool = False, verbose: bool = False,
            lang: str | None = None) -> str:
    """Per exercise, points and a short reason. With `detail`, an exercise that lost points is
    followed by the rest of what its self-check cell shows (the root cause said once, its fix,
    one line per failed check); with `verbose`, by every check and everything it saw. In `lang`
    (i18n.py) when given (None: $AUTOGRADER_LANG, else English)."""
    lang = language(lang)
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
                idle = localize(N_("{what} in {names}").format(what=NOT_STARTED, names=names), lang)
                lines.append(f"  {lesson:<34} {_pts(score):>2}/{_pts(total):<4} {idle}")
            continue
        if lesson != current:
            current = lesson
            lines.append(f"  {lesson}")
        head, body = (exercise_report(_tests_of(results, lesson, exercise), verbose=verbose, lang=lang)
                      if detail or verbose else (reason(entry, lang), []))
        lines.append(clip(f"    {exercise:<30} {_pts(entry['score']):>4}/{_pts(entry['max']):<4} {head}",
                          TERMINAL_LINE))
        if body:
            lines.extend(_terminal_block(["        " + ln if ln else "" for ln in body], lang))
            lines.append("")
    for note in results.get("output", "").splitlines():
        lines.append(clip("  " + gettext_(N_("note: {note}"), lang).format(note=localize(note, lang)), TERMINAL_LINE))
    lines.append("  " + gettext_(N_("total {score}/{max}"), lang).format(score=_pts(results["score"]),
                                                                       max=_pts(results["max_score"])))
    return "\n".join(lines)


def _terminal_block(lines: list[str], lang: str | None = None) -> list[str]:
    """An exercise's lines for the terminal: each cut to TERMINAL_LINE, and all of them to about
    TERMINAL_EXERCISE characters (what a check saw can be long; the feedback file has it)."""
    out, size = [], 0
    for i, line in enumerate(lines):
        if size > TERMINAL_EXERCISE:
            out.append("        " + gettext_(N_("... {n} more lines (the feedback file has them)"), lang).format(
                n=len(lines) - i))
            break
        out.append(clip(line, TERMINAL_LINE))
        size += len(out[-1])
    return out


def _tests_of(results: dict, lesson: str, exercise: str) -> list[dict]:
    return [t for t in results.get("tests", [])
            if f"lesson:{lesson}" in t.get("tags", ()) and f"exercise:{exercise}" in t.get("tags", ())]


def _short_name(test: dict) -> str:
    return test["name"].split(": ", 1)[-1]


def exercise_report(tests: list[dict], *, verbose: bool = False, lang: str | None = None) -> tuple[str, list[str]]:
    """(one line, the lines after it) for one exercise's checks: what the terminal, the
    self-check cell and feedback.md show. Nothing is said twice: the root cause and its fix once,
    then one line per failed check (name: what it saw), checks that saw the same thing merged.
    `verbose`: every check, passed ones too, and all that each saw. In `lang` when given."""
    head, cause, checks = _exercise_parts(tests, verbose)
    lang = language(lang)
    return localize(head, lang), [localize(line, lang) for line in cause + checks]


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
        return N_("all checks passed"), passed_notes(tests), []
    if _not_started(tests, failed):
        return NOT_STARTED, [], ([N_("FAILED  {check}").format(check=_short_name(t)) for t in tests] if verbose else [])
    block = next((h for h in (split_summary(t["output"])[0] for t in failed) if h), None)
    parts = [(t, *own_part(t["output"])) for t in failed] if block else \
            [(t, None, t["output"], False) for t in failed]
    causes = {label for _, labels, _, _ in parts for label in labels or ()}
    groups: dict[tuple, list[dict]] = {}       # checks that saw the same thing, in order
    for t, labels, evidence, unexplained in parts:
        groups.setdefault((unexplained, tuple(labels or ()), evidence.strip()), []).append(t)

    def check_lines(key, group) -> list[str]:
        _, labels, evidence = key
        tagged = labels and len(causes) > 1
        if verbose:
            return [(N_("FAILED  {check} [{labels}]") if tagged else N_("FAILED  {check}")).format(
                        check=_short_name(t), labels=", ".join(labels)) for t in group] + \
                   ["        " + ln for ln in evidence.splitlines()]
        names = (N_("all {n} checks").format(n=len(group)) if len(group) == len(tests) > 1
                 else "; ".join(map(_short_name, group)))
        return [(N_("FAILED  {checks} [{labels}]: {evidence}") if tagged else N_("FAILED  {checks}: {evidence}")).format(
            checks=names, labels=", ".join(labels), evidence=_one_line(evidence))]

    cause: list[str] = []
    if block:
        head, *cause = block.splitlines()
    elif len(groups) == 1 and len(failed) == len(tests) and not verbose:
        (key, group), = groups.items()        # every check failed the same way: say it once
        return _one_line(key[2]), [], []
    else:
        head = N_("{failed} of {total} checks failed").format(failed=len(failed), total=len(tests))
    lines: list[str] = []
    ordered = sorted(groups.items(), key=lambda kv: kv[0][0])        # explained ones first
    for i, (key, group) in enumerate(ordered):
        if key[0] and (i == 0 or not ordered[i - 1][0][0]):
            many = len(causes) > 1
            lines.append(N_("Also failing, maybe because of the mistakes above (fix them first):") if many else
                         N_("Also failing, maybe because of the mistake above (fix it first):"))
        lines.extend(check_lines(key, group))
    if verbose:
        lines.extend(N_("passed  {check}").format(check=_short_name(t)) for t in tests if t["status"] == "passed")
    return head, cause, lines


def feedback_markdown(student: str, results: dict, lang: str | None = None) -> str:
    """A page a student can read: per exercise, points and the same text as the self-check (the
    root cause and its fix once, one line per failed check); every check in full at the end.

    Every text a student can influence (the folder name, notes about their files, a check's output
    with their exception messages) is escaped: outside code blocks each ASCII punctuation character
    is backslash-escaped (no markup, no raw HTML), and a code block's fence is longer than any run
    of backticks inside it, so no line of the text can close it. In `lang` when given (i18n.py)."""
    lang = language(lang)

    def tr(message: str) -> str:
        return gettext_(message, lang)
    lines = ["# " + tr(N_("Feedback for {student}")).format(student=markdown_text(student)), "",
             "**" + tr(N_("Score: {score} / {max}")).format(score=_pts(results['score']),
                                                         max=_pts(results['max_score'])) + "**", ""]
    if results.get("output"):
        lines += [tr(N_("Notes about your files:")), ""] + [
            f"- {markdown_text(localize(n, lang))}" for n in results["output"].splitlines()] + [""]
    from autograder.diagnose.root_cause import NOT_STARTED
    current, full = None, []
    for (lesson, exercise), entry in by_exercise(results).items():
        if lesson != current:
            current = lesson
            lines += ([""] if lines[-1] else []) + [f"## {markdown_text(lesson)}", ""]
        tests = _tests_of(results, lesson, exercise)
        points = f"**{markdown_text(exercise)}**: {_pts(entry['score'])} / {_pts(entry['max'])}"
        head, body = exercise_report(tests, lang=lang)
        if not entry["failed"] or head == localize(NOT_STARTED, lang):
            lines.append("- " + tr(N_("{points}, {head}.")).format(points=points, head=markdown_text(head)))
            continue
        lines += [f"- {points}", ""] + [f"  {ln}" for ln in code_block("\n".join([head, *body])).splitlines()] + [""]
        full.append((lesson, exercise, tests))
    page = "\n".join(lines).rstrip("\n") + "\n"
    if full:
        appendix = ["", "## " + tr(N_("Every check in full")), ""]
        for lesson, exercise, tests in full:
            _, _, checks = _exercise_parts(tests, verbose=True)    # the root cause is said above
            checks = [localize(line, lang) for line in checks]
            appendix += [f"### {markdown_text(lesson)}: {markdown_text(exercise)}", "", code_block("\n".join(checks)), ""]
        whole = page + "\n".join(appendix).rstrip("\n") + "\n"
        page = whole if len(whole.encode()) <= FEEDBACK_BYTES else page + (
            "\n## " + tr(N_("Every check in full")) + "\n\n" +
            tr(N_("Not shown: it is longer than the grader writes here. results.json holds what each check saw.")) + "\n")
    return _cut_page(page, lang)


def _cut_page(page: str, lang: str | None = None) -> str:
    """The final guard on feedback.md: a page over FEEDBACK_BYTES ends where it is cut, and says so
    (results.json is bounded, so an honest page never comes near)."""
    if len(page.encode()) <= FEEDBACK_BYTES:
        return page
    head = page.encode()[:FEEDBACK_BYTES - 1000].decode("utf-8", "ignore")
    return head + "\n\n" + gettext_(N_("(This page was cut here: it is longer than the grader writes. results.json "
                                       "holds the rest.)"), lang) + "\n"


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


def verdict(exercise: str, tests: list[dict], *, verbose: bool = False, lang: str | None = None) -> str:
    """What a self-check cell prints: the points and, when some were lost, the same text as the
    terminal (exercise_report). In `lang` when given."""
    lang = language(lang)
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    if not tests:
        return gettext_(N_("{exercise}: no checks found for this exercise"), lang).format(exercise=exercise)
    if score == total:
        notes = "".join(f"\n  {localize(n, lang)}" for n in passed_notes(tests))
        if len(tests) == 1:  # "all 1 checks" is not English
            return gettext_(N_("{exercise}: passed all checks (1 of 1; {score}/{total} points)."), lang).format(
                exercise=exercise, score=f"{score:g}", total=f"{total:g}") + notes
        return gettext_(N_("{exercise}: passed all {n} checks ({score}/{total} points)."), lang).format(
            exercise=exercise, n=len(tests), score=f"{score:g}", total=f"{total:g}") + notes
    head, body = exercise_report(tests, verbose=verbose, lang=lang)
    if not lang:
        head = f"{head[:1].upper()}{head[1:]}"
    lines = [gettext_(N_("{exercise}: {score}/{total} points. {head}"), lang).format(
        exercise=exercise, score=f"{score:g}", total=f"{total:g}", head=head)]
    lines.extend("  " + line for line in body)
    return "\n".join(lines)


def sandbox_line(layers: list[str], verbose: bool = False) -> str:
    """The first line of a grade: the sandbox's layers. In full with --verbose; otherwise each layer's
    name only (what it holds is in `python -m autograder doctor`), so a student's results are not
    pushed down by a paragraph of isolation terms. A layer that is missing ("NO Landlock") still shows."""
    if verbose:
        return "sandbox: " + "; ".join(layers)
    names = [re.split(r" \(|: ", layer, maxsplit=1)[0] for layer in layers]
    return localize(N_("sandbox: {layers} (--verbose says what each holds)").format(layers="; ".join(names)),
                    language(None))

