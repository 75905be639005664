"""Report: the files of a grading run written whole (never half), and results.json within its bounds."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from autograder.i18n import language, localize
from autograder.run.bounds import CHECK_OUTPUT, clip

# The final guard on what one student's results.json can weigh (results.py has feedback.md's), whatever
# got past the cuts where the child's texts enter the grader (run/bounds.py): an honest student's is
# ~12 KB, far below.
RESULTS_BYTES = 400_000    # results.json as JSON (feedback.md says each output about twice)
NOTES = 20_000             # characters of notes about the files


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


def write_results(path: Path, result: dict, lang: str | None = None) -> None:
    """One student's results.json, within RESULTS_BYTES whatever it holds (bounded). With `lang`, the
    texts a student reads (each check's output, the notes) are in that language; ids, names, scores
    and field names stay as they are."""
    write_json(path, bounded(localized(result, lang)))


def localized(result: dict, lang: str | None) -> dict:
    """A copy of a results object whose human-readable texts (each check's `output`, the notes) are in
    `lang` (None: $AUTOGRADER_LANG); the object itself in English. Ids, names, tags, scores and field names
    are unchanged."""
    lang = language(lang)
    out = dict(result) if lang else result     # (no line of a lesson's answer here: the kit's leak test)
    if not lang:
        return out
    out["tests"] = [dict(t, output=localize(str(t.get("output", "")), lang)) if isinstance(t, dict) and "output" in t
                    else t for t in result.get("tests", [])]
    if "output" in result:
        out["output"] = localize(str(result["output"]), lang)
    return out


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
