"""How trustworthy is the grader? Grade the corpus of known submissions and count its errors.

    python -m autograder.accuracy [--jobs N] [--corpus DIR]

The corpus (tests/corpus/) holds one file per submission. Its header says what it is:

    # lesson: 02_masking
    # expect: correct                                   (every exercise it fills in gets full marks)
    # expect: wrong <grade_id> <mistake-id or ->        (that exercise loses points; "-": no catalogued mistake)

and each `# %% <grade_id>` section replaces that graded cell of the released lesson. The table
printed counts false fails (a correct submission losing points), false passes (a wrong one
keeping full marks) and how many catalogued mistakes were named correctly.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .course import COURSE, ROOT
from .report import by_exercise, mistake_of

CORPUS = ROOT / "tests" / "corpus"


@dataclass
class Entry:
    name: str
    lesson: str
    expect: str                      # "correct" | "wrong"
    exercise: str | None = None
    mistake: str | None = None       # catalogue id expected to be named (None: no catalogued mistake)
    cells: dict[str, str] = field(default_factory=dict)


def parse(path: Path) -> Entry:
    text = path.read_text(encoding="utf-8")
    lesson = re.search(r"^# lesson: (\S+)", text, re.M).group(1)
    expect = re.search(r"^# expect: (.+)$", text, re.M).group(1).split()
    entry = Entry(path.stem, lesson, expect[0])
    if expect[0] == "wrong":
        entry.exercise = expect[1]
        entry.mistake = None if expect[2] == "-" else expect[2]
    parts = re.split(r"^# %% (\S+)\s*$", text, flags=re.M)
    for gid, body in zip(parts[1::2], parts[2::2]):
        entry.cells[gid] = body.strip("\n") + "\n"
    return entry


def load(corpus: Path = CORPUS) -> list[Entry]:
    return [parse(p) for p in sorted(corpus.glob("*.py"))]


def notebook_for(entry: Entry) -> str:
    """The released lesson with the entry's cells put in place of the stubs."""
    nb = json.loads(COURSE[entry.lesson].released_path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in entry.cells:
            cell["source"] = entry.cells[gid]
    return json.dumps(nb)


def build_class(entries: list[Entry], folder: Path) -> dict[str, dict[str, Path]]:
    students = {}
    for entry in entries:
        path = folder / entry.name / f"{entry.lesson}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(notebook_for(entry), encoding="utf-8")
        students[entry.name] = {entry.lesson: path}
    return students


@dataclass
class Verdict:
    entry: Entry
    ok: bool            # graded as expected (full marks / lost points)
    named: bool | None  # for catalogued wrong entries: the mistake was named
    detail: str


def judge(entry: Entry, result: dict) -> Verdict:
    exercises = by_exercise(result)
    if entry.expect == "correct":
        lost = [f"{ex} {e['score']:g}/{e['max']:g}" for (lesson, ex), e in exercises.items()
                if ex in entry.cells and e["score"] < e["max"]]
        missing = [ex for ex in entry.cells if (entry.lesson, ex) not in exercises]
        ok = not lost and not missing
        return Verdict(entry, ok, None, "full marks" if ok else f"lost points: {', '.join(lost + missing)}")
    e = exercises.get((entry.lesson, entry.exercise))
    if e is None:
        return Verdict(entry, False, False, f"{entry.exercise} was not graded")
    ok = e["score"] < e["max"]
    named_ids = {mistake_of(t) for t in e["failed"]} - {None}
    named = None if entry.mistake is None else entry.mistake in named_ids
    if entry.mistake is None and named_ids:
        detail = f"{e['score']:g}/{e['max']:g}, named {sorted(named_ids)} (expected none)"
    else:
        detail = f"{e['score']:g}/{e['max']:g}, named {sorted(named_ids) or 'nothing'}"
    return Verdict(entry, ok, named, detail)


def grade_corpus(entries: list[Entry], jobs: int | None = None) -> list[Verdict]:
    from .classroom import grade_many
    with tempfile.TemporaryDirectory(prefix="corpus-") as tmp:
        students = build_class(entries, Path(tmp))
        results = grade_many(students, jobs=jobs, show=lambda *_: None)
    return [judge(entry, results[entry.name]) for entry in entries]


def table(verdicts: list[Verdict]) -> tuple[str, dict]:
    correct = [v for v in verdicts if v.entry.expect == "correct"]
    wrong = [v for v in verdicts if v.entry.expect == "wrong"]
    catalogued = [v for v in wrong if v.entry.mistake is not None]
    stats = {
        "correct": len(correct), "false_fails": sum(not v.ok for v in correct),
        "wrong": len(wrong), "false_passes": sum(not v.ok for v in wrong),
        "catalogued": len(catalogued), "named": sum(bool(v.named) for v in catalogued),
        "lessons": len({v.entry.lesson for v in verdicts}),
    }
    stats["named_share"] = stats["named"] / stats["catalogued"] if catalogued else 1.0
    lines = [f"{'submission':<44} {'expected':<44} result"]
    for v in verdicts:
        e = v.entry
        expected = "full marks" if e.expect == "correct" else f"{e.exercise} fails, {e.mistake or 'no catalogue id'}"
        flag = "ok " if v.ok and v.named is not False else "!! "
        lines.append(f"{flag}{e.name:<41} {expected:<44} {v.detail}")
    lines += [
        "",
        f"correct submissions given full marks : {stats['correct'] - stats['false_fails']}/{stats['correct']}"
        f"   (false fails: {stats['false_fails']})",
        f"wrong submissions rejected           : {stats['wrong'] - stats['false_passes']}/{stats['wrong']}"
        f"   (false passes: {stats['false_passes']})",
        f"catalogued mistakes named correctly  : {stats['named']}/{stats['catalogued']}"
        f"   ({100 * stats['named_share']:.0f} %)",
        f"lessons covered                      : {stats['lessons']}",
    ]
    return "\n".join(lines), stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.accuracy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    text, stats = table(grade_corpus(load(args.corpus), jobs=args.jobs))
    print(text)
    return 0 if stats["false_fails"] == 0 and stats["false_passes"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
