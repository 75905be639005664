"""How much of the translated feedback is still English? Grade the whole corpus in a language and list
every line that keeps an English sentence.

    python -m autograder.classroom.english_left [--lang zh_CN] [--jobs N] [--out DIR] [--only SUBSTRING]

Grades every entry of tests/corpus/ (and a few submissions the corpus has none of: each lesson
untouched, in both editions; a tampered locked cell; a hang; a crash; a broken file), with
`python -m autograder grade --lang LANG` as an instructor would, then reads every text a reader gets
in that language: the terminal (the run's own lines, each student's summary in full and --verbose,
each exercise's self-check verdict), feedback.md, the outputs Gradescope shows (results.json
localized), and the class report. A line is listed when it holds a run of `--words` English words
(3 by default) that is not code, a call, a shape, an identifier of the lesson's API, a mistake id, a
path, or a student's own exception. `--out DIR` keeps the graded class: a second run grades only the
submissions that changed and re-reads every text with today's catalog (a catalog-only fix is
re-measured in seconds). Prints the lines with how many students get each, then the counts; exits 1
when any is left.
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from autograder.course import COURSE, LESSONS, ROOT

# ------------------------------------------------------------------------------------ what counts as English

# Code, ids and names, taken out of a line before its words are read: inline code, [mistake-ids],
# calls with their arguments, brackets (shapes, values), identifiers with an underscore or a dot or an
# inner capital (softmax's callers, nn.Dropout, MultiHeadAttention), paths and options.
_CODE = [r"`[^`]*`", r"\[[a-z0-9-]+(?:, [a-z0-9-]+)*\]", r"\b\w+(?:\.\w+)*\([^()]*(?:\([^()]*\)[^()]*)*\)",
         r"\([^()]*\)", r"\[[^\]]*\]", r"\b\w*_\w*\b", r"\b\w+(?:\.\w+)+\b", r"\b[a-z]+[A-Z]\w*\b",
         r"\b[A-Z][a-z]+[A-Z]\w*\b", r"(?<!\w)[\w.-]*/[\w./-]*", r"--?[a-z][\w-]*", r"<[^>]*>",
         r"\b[a-zA-Z](?:, [a-zA-Z])+\b"]     # q, k, v
_WORD = r"[A-Za-z][a-z'-]*(?!\w)"


def _run_pattern(words: int) -> re.Pattern:
    return re.compile(rf"\b{_WORD}(?:[ ,]+{_WORD}){{{words - 1},}}")


# A line that is a student's own text, not ours: a traceback's frame, an exception with its message,
# the cell of code quoted from a traceback
_THEIRS = re.compile(r"\s*(cell [\w.]+, line|\(?at cell [\w.]+, line|File |Traceback|"
                     r"[A-Z]\w*(Error|Exception|Warning|Interrupt|Exit)\b|assertion: |\^+\s*$|-+>|\d+ \| )")
# where our sentence ends and the student's exception begins ("... 抛出了 ValueError: ...", "...：SyntaxError:
# ..."), or a library's own message that our sentence quotes (NumPy's MemoryError, json's decoder error)
_THEIR_TAIL = re.compile(r"抛出了?(?:异常)?[：:]|抛出了? ?[A-Z]\w*(?:Error|Exception|Exit)\b|"
                         r"[：:(（]\s*[A-Z]\w*(?:Error|Exception|Warning|Exit)\b[:：]|"
                         r"\b(?:raised|raises) [A-Z]\w*(?:Error|Exception|Exit)\b|"
                         r"\bUnable to allocate \S+ \S+ for an array|JSON（Expecting |\(at cell [\w.]+, line")


def english_runs(text: str, words: int = 4) -> list[str]:
    """The runs of `words` or more English words left in a translated text, outside code, ids and a
    student's own exception."""
    run = _run_pattern(words)
    return [found for line in _lines(text) for found in english_runs_of_line(line, run)]


def _lines(text: str):
    """A page's lines, its markdown escapes and code fences left out."""
    return (line for line in text.replace("\\", "").splitlines() if not line.lstrip().startswith("```"))


def english_runs_of_line(line: str, run: re.Pattern) -> list[str]:
    if _THEIRS.match(line):
        return []
    line = _THEIR_TAIL.split(line)[0]
    for pattern in _CODE:
        line = re.sub(pattern, " ", line)
    return run.findall(line)


# ------------------------------------------------------------------------------------ the class to grade

EXTRAS = ("tampered", "hang", "crash", "syntax-error", "empty-file", "not-json")   # besides "untouched[.<lang>]"


def extras(folder: Path, untouched: bool = True) -> None:
    """Submissions the corpus has none of: every lesson untouched (English and each translation), a
    tampered locked cell, a hang, a crash, a syntax error and broken files."""
    from autograder.course import TRANSLATIONS
    for lesson in COURSE if untouched else ():
        for lang in (None, *TRANSLATIONS):
            source = (LESSONS / lang / f"{lesson}.ipynb") if lang else COURSE[lesson].released_path
            if source.exists():
                target = folder / f"untouched{'.' + lang if lang else ''}" / f"{lesson}.ipynb"
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(source.read_bytes())
    first = next(iter(COURSE))
    released = json.loads(COURSE[first].released_path.read_text(encoding="utf-8"))

    def notebook(name, change):
        nb = json.loads(json.dumps(released))
        change(nb)
        path = folder / name / f"{first}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(nb), encoding="utf-8")

    def graded(nb, gid, source):
        for cell in nb["cells"]:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == gid:
                cell["source"] = source

    def tamper(nb):
        for cell in nb["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] == "code" and meta.get("locked") and not meta.get("solution") and meta.get("grade_id"):
                cell["source"] = "print('mine')\n"
                return

    gid = COURSE[first].exercises[0]
    notebook("tampered", tamper)
    notebook("hang", lambda nb: graded(nb, gid, f"def {gid}(*args, **kwargs):\n    while True:\n        pass\n"))
    notebook("crash", lambda nb: graded(nb, gid, f"import os\ndef {gid}(*args, **kwargs):\n    os._exit(3)\n"))
    notebook("syntax-error", lambda nb: graded(nb, gid, f"def {gid}(x, axis=-1)\n    return x\n"))
    for name, text in (("empty-file", ""), ("not-json", "{ not json")):
        path = folder / name / f"{first}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def build(folder: Path, only: str | None = None) -> list[str]:
    from autograder.classroom import accuracy
    entries = [e for e in accuracy.load() if only is None or only in e.name]
    accuracy.build_class(entries, folder)
    if only is None:
        extras(folder)
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def grade(folder: Path, out: Path, lang: str, jobs: int) -> str:
    """The terminal of `grade FOLDER --out OUT --lang LANG`, stdout and stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out),
                          "--lang", lang, "--jobs", str(jobs)], capture_output=True, text=True, env=env, cwd=ROOT)
    if run.returncode != 0:
        raise SystemExit(f"grading failed ({run.returncode}):\n{run.stderr[-3000:]}")
    return run.stdout + run.stderr


# ------------------------------------------------------------------------------------ what a reader reads

def texts(out: Path, students: list[str], lang: str, terminal: str) -> dict[str, dict[str, str]]:
    """{student ("" for the run's own): {where: text}}, every text read again from the English
    results.json with today's catalog."""
    from autograder.report.class_report import class_report_html
    from autograder.report.results import feedback_markdown, localized, summary, verdict
    read: dict[str, dict[str, str]] = {}
    results = {}
    for student in students:
        path = out / "students" / student / "results.json"
        if not path.exists():
            continue
        result = results[student] = json.loads(path.read_text(encoding="utf-8"))
        zh = localized(result, lang)
        exercises = sorted({t for test in result["tests"] for t in test.get("tags", []) if t.startswith("exercise:")})
        read[student] = {
            "feedback.md": feedback_markdown(student, result, lang=lang),
            "terminal": summary(result, title=student, detail=True, lang=lang),
            "terminal --verbose": summary(result, title=student, verbose=True, lang=lang),
            "terminal --brief": summary(result, title=student, lang=lang),
            "self-check": "\n".join(verdict(ex[9:], [t for t in result["tests"] if ex in t.get("tags", [])], lang=lang)
                                    for ex in exercises),
            "results.json": "\n".join([str(zh.get("output", ""))] + [str(t.get("output", "")) for t in zh["tests"]]),
        }
    page = class_report_html(results, out, lang)
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    page = re.sub(r"data:[^\"')]+", " ", page)
    text = html.unescape(re.sub(r"<[^>]+>", "\n", page))
    read[""] = {"terminal (the run)": terminal, "class-report.html": text}
    return read


def left_in(out: Path, lang: str, words: int, terminal: str = ""):
    """measure() of every text a class graded into `out` (`grade --out`) gives its reader in `lang`."""
    students = sorted(p.name for p in (out / "students").iterdir())
    return measure(texts(out, students, lang, terminal), words)


def measure(read: dict[str, dict[str, str]], words: int):
    """{line: {where}} and {line: {student}} for every line that keeps English."""
    run = _run_pattern(words)
    where, who = defaultdict(set), defaultdict(set)
    # the students' names (their folders: "crash, hang, ...") are theirs, not words of ours
    names = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, sorted(filter(None, read), key=len, reverse=True)))
                       + r")(?![\w-])") if any(read) else None
    for student, pages in read.items():
        for name, text in pages.items():
            for line in _lines(text):
                if english_runs_of_line(names.sub(" ", line) if names else line, run):
                    key = re.sub(r"\s+", " ", line.strip())
                    where[key].add(name)
                    if student:
                        who[key].add(student)
    return where, who


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.classroom.english_left", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lang", default="zh_CN")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="keep the graded class here (re-runs reuse it)")
    parser.add_argument("--only", default=None, help="only the corpus entries whose name contains this")
    parser.add_argument("--words", type=int, default=3, help="English words in a row that count (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="english-left-") as tmp:
        out = args.out or Path(tmp)
        folder = out / "class"
        students = build(folder, args.only)
        terminal = grade(folder, out / "graded", args.lang, args.jobs)
        (out / "terminal.txt").write_text(terminal, encoding="utf-8")
        where, who = measure(texts(out / "graded", students, args.lang, terminal), args.words)
    for line in sorted(where, key=lambda k: (-len(who[k]), k)):
        print(f"{len(who[line]):>4}  {line[:300]}\n      in {', '.join(sorted(where[line]))}"
              + (f"; e.g. {sorted(who[line])[0]}" if who[line] else ""))
    students_left = set().union(*who.values()) if who else set()
    print(f"\n{len(where)} distinct line(s) keep {args.words}+ English words; "
          f"{len(students_left)} of {len(students)} students get at least one")
    return 1 if where else 0


if __name__ == "__main__":
    sys.exit(main())
