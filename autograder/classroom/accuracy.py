"""How trustworthy is the grader? Grade the corpus of known submissions and count its errors.

    python -m autograder.classroom.accuracy [--jobs N] [--corpus DIR] [--only SUBSTRING]

The corpus (tests/corpus/) holds one file per submission. Its header says what it is:

    # lesson: 05_multi_head_attention
    # source: <repository> <path> <commit>              (optional, free text, may repeat)
    # expect: correct                                   (every exercise it fills in gets full marks)
    # expect: wrong <grade_id> <mistake-id ...>         (that exercise loses points and the grader
    # expect: wrong <grade_id> -                         names exactly these mistakes; "-": wrong,
                                                         but no catalogued mistake fits)
    # expect: full <grade_id>                           (in a wrong entry: that exercise, correct but
                                                         calling a wrong one, still gets full marks)

A wrong entry may have several `# expect: wrong` lines, one per exercise, each naming zero or
more mistake ids. Each `# %% <grade_id>` section replaces that graded cell of the released
lesson. The report counts, per entry, false fails (a correct submission losing points) and
false passes (an exercise expected wrong keeping full marks); per mistake id, how often it was
named where it is present (recall); the share of entries with every mistake named; and
precision: a mistake the grader names that the entry does not have is an error.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import COURSE, ROOT
from autograder.report.results import by_exercise, mistakes_of

CORPUS = ROOT / "tests" / "corpus"


@dataclass
class Entry:
    name: str
    lesson: str
    expect: str                      # "correct" | "wrong"
    wrong: dict[str, list[str]] = field(default_factory=dict)   # grade_id -> expected mistake ids
    cells: dict[str, str] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    full: list[str] = field(default_factory=list)   # correct exercises of a wrong entry: full marks

    # the first wrong exercise and its first mistake (older callers)
    @property
    def exercise(self) -> str | None:
        return next(iter(self.wrong), None)

    @property
    def mistake(self) -> str | None:
        ids = self.wrong.get(self.exercise) if self.wrong else None
        return ids[0] if ids else None

    @property
    def mistakes(self) -> list[str]:
        return [m for ids in self.wrong.values() for m in ids]


def parse(path: Path) -> Entry:
    text = path.read_text(encoding="utf-8")
    lesson = re.search(r"^# lesson: (\S+)", text, re.M).group(1)
    lines = [ln.split() for ln in re.findall(r"^# expect: (.+)$", text, re.M)]
    if not lines:
        raise ValueError(f"{path.name}: no '# expect:' line")
    entry = Entry(path.stem, lesson, "wrong" if any(ln[0] == "wrong" for ln in lines) else "correct")
    entry.sources = re.findall(r"^# source: (.+)$", text, re.M)
    for ln in lines:
        if ln[0] == "correct":
            continue
        if ln[0] == "full" and len(ln) == 2:
            entry.full.append(ln[1])
            continue
        if ln[0] != "wrong" or len(ln) < 3:
            raise ValueError(f"{path.name}: bad expect line {' '.join(ln)!r}")
        ids = [m for m in ln[2:] if m != "-"]
        entry.wrong.setdefault(ln[1], []).extend(m for m in ids if m not in entry.wrong.get(ln[1], []))
    parts = re.split(r"^# %% (\S+)\s*$", text, flags=re.M)
    for gid, body in zip(parts[1::2], parts[2::2]):
        entry.cells[gid] = body.strip("\n") + "\n"
    return entry


def load(corpus: Path = CORPUS) -> list[Entry]:
    return [parse(p) for p in sorted(corpus.glob("*.py"))]


def notebook_for(entry: Entry, released: Path | None = None) -> str:
    """The released lesson (or `released`, another edition of it: lessons/<lang>/) with the
    entry's cells put in place of the stubs."""
    nb = json.loads((released or COURSE[entry.lesson].released_path).read_text(encoding="utf-8"))
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
    ok: bool                 # graded as expected (full marks / lost points where expected)
    named: bool | None       # every expected mistake was named (None: the entry expects none)
    detail: str
    found: dict[str, set[str]] = field(default_factory=dict)   # grade_id -> ids the grader named
    output: str = ""         # the feedback of the entry's wrong exercises
    scores: dict[str, tuple[float, float]] = field(default_factory=dict)   # grade_id -> (score, max)

    @property
    def hits(self) -> list[tuple[str, bool]]:
        """(expected id, named?) for each expected mistake."""
        return [(m, m in self.found.get(ex, set())) for ex, ids in self.entry.wrong.items() for m in ids]

    @property
    def false_names(self) -> list[str]:
        """ids named where the entry does not have them."""
        return sorted(m for ex, ids in self.found.items() for m in ids if m not in self.entry.wrong.get(ex, ()))


def judge(entry: Entry, result: dict) -> Verdict:
    exercises = by_exercise(result)
    if entry.expect == "correct":
        lost = [f"{ex} {e['score']:g}/{e['max']:g}" for (lesson, ex), e in exercises.items()
                if ex in entry.cells and e["score"] < e["max"]]
        missing = [ex for ex in entry.cells if (entry.lesson, ex) not in exercises]
        found = {ex: {m for t in e["failed"] for m in mistakes_of(t)} for (lesson, ex), e in exercises.items()
                 if ex in entry.cells and e["failed"]}
        ok = not lost and not missing
        return Verdict(entry, ok, None, "full marks" if ok else f"lost points: {', '.join(lost + missing)}",
                       found={ex: ids for ex, ids in found.items() if ids})
    parts, ok, found, outputs = [], True, {}, []
    scores = {ex: (e["score"], e["max"]) for (lesson, ex), e in exercises.items() if ex in entry.wrong}
    for ex in entry.wrong:
        e = exercises.get((entry.lesson, ex))
        if e is None:
            ok = False
            parts.append(f"{ex} was not graded")
            continue
        ok &= e["score"] < e["max"]
        found[ex] = {m for t in e["failed"] for m in mistakes_of(t)}
        parts.append(f"{ex} {e['score']:g}/{e['max']:g} named {' '.join(sorted(found[ex])) or 'nothing'}")
        outputs += [f"[{ex}] {t['name'].split(': ', 1)[-1]}\n{t['output']}" for t in e["failed"]]
    for ex in entry.full:
        e = exercises.get((entry.lesson, ex))
        if e is None or e["score"] < e["max"]:
            ok = False
            parts.append(f"{ex} (correct) " + ("was not graded" if e is None else f"lost points: {e['score']:g}/{e['max']:g}"))
    expected = entry.mistakes
    named = None if not expected else all(m in found.get(ex, set()) for ex, ids in entry.wrong.items() for m in ids)
    return Verdict(entry, ok, named, "; ".join(parts), found=found, output="\n\n".join(outputs), scores=scores)


def grade_entries(entries: list[Entry], jobs: int | None = None) -> dict[str, dict]:
    """{entry name: its results}, each entry graded as a student of one class."""
    from autograder.classroom.runner import grade_many
    with tempfile.TemporaryDirectory(prefix="corpus-") as tmp:
        students = build_class(entries, Path(tmp))
        return grade_many(students, jobs=jobs, show=lambda *_: None)


def grade_corpus(entries: list[Entry], jobs: int | None = None) -> list[Verdict]:
    results = grade_entries(entries, jobs)
    return [judge(entry, results[entry.name]) for entry in entries]


def table(verdicts: list[Verdict]) -> tuple[str, dict]:
    correct = [v for v in verdicts if v.entry.expect == "correct"]
    wrong = [v for v in verdicts if v.entry.expect == "wrong"]
    with_ids = [v for v in wrong if v.entry.mistakes]
    present, named = Counter(), Counter()
    for v in wrong:
        for m, hit in v.hits:
            present[m] += 1
            named[m] += hit
    n_named_total = sum(len(ids) for v in wrong for ids in v.found.values())
    n_false_names = sum(len(v.false_names) for v in wrong)
    stats = {
        "correct": len(correct), "false_fails": sum(not v.ok for v in correct),
        "wrong": len(wrong), "false_passes": sum(not v.ok for v in wrong),
        "catalogued": sum(present.values()), "named": sum(named.values()),
        "entries_with_ids": len(with_ids), "entries_all_named": sum(bool(v.named) for v in with_ids),
        "namings": n_named_total, "false_names": n_false_names,
        "lessons": len({v.entry.lesson for v in verdicts}),
        "recall": {m: (named[m], present[m]) for m in sorted(present)},
    }
    stats["named_share"] = stats["named"] / stats["catalogued"] if stats["catalogued"] else 1.0
    stats["all_named_share"] = stats["entries_all_named"] / len(with_ids) if with_ids else 1.0
    stats["precision"] = 1 - n_false_names / n_named_total if n_named_total else 1.0
    lines = [f"{'submission':<44} {'expected':<50} result"]
    for v in verdicts:
        e = v.entry
        expected = "full marks" if e.expect == "correct" else "; ".join(
            f"{ex}: {' '.join(ids) or '-'}" for ex, ids in e.wrong.items())
        bad = not v.ok or v.named is False or v.false_names
        extra = f"  (wrongly named: {' '.join(v.false_names)})" if v.false_names else ""
        lines.append(f"{'!! ' if bad else 'ok '}{e.name:<41} {expected:<50} {v.detail}{extra}")
    lines += ["", f"{'mistake id':<28} named / present"]
    for m, (hit, n) in stats["recall"].items():
        lines.append(f"{'!! ' if hit < n else '   '}{m:<25} {hit:>3} / {n:<3} ({100 * hit / n:.0f} %)")
    lines += [
        "",
        f"correct submissions given full marks : {stats['correct'] - stats['false_fails']}/{stats['correct']}"
        f"   (false fails: {stats['false_fails']})",
        f"wrong submissions rejected           : {stats['wrong'] - stats['false_passes']}/{stats['wrong']}"
        f"   (false passes: {stats['false_passes']})",
        f"catalogued mistakes named (recall)   : {stats['named']}/{stats['catalogued']}"
        f"   ({100 * stats['named_share']:.1f} %)",
        f"entries with every mistake named     : {stats['entries_all_named']}/{len(with_ids)}"
        f"   ({100 * stats['all_named_share']:.1f} %)",
        f"namings that are right (precision)   : {n_named_total - n_false_names}/{n_named_total}"
        f"   ({100 * stats['precision']:.1f} %)",
        f"lessons covered                      : {stats['lessons']}",
    ]
    return "\n".join(lines), stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.classroom.accuracy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--only", default=None, help="grade only entries whose name contains this")
    parser.add_argument("--feedback", action="store_true", help="also print the feedback of wrong entries")
    args = parser.parse_args(argv)
    entries = [e for e in load(args.corpus) if args.only is None or args.only in e.name]
    verdicts = grade_corpus(entries, jobs=args.jobs)
    text, stats = table(verdicts)
    if args.feedback:
        for v in verdicts:
            if v.output:
                print(f"===== {v.entry.name}\n{v.output}\n")
    print(text)
    return 0 if stats["false_fails"] == 0 and stats["false_passes"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
