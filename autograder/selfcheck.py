"""The self-check cells: run the autograder's own checks on a function, inside the notebook.

A lesson's setup cell does `check = checker("<lesson_id>")`; the cell after each stub calls
`check("<grade_id>", obj)`. It prints a short verdict and returns the points earned: nbgrader
reads that number as the cell's partial credit, so `nbgrader autograde` agrees with
`python -m autograder grade`. Nothing is written to stderr (nbgrader scores stderr as zero).
"""
from __future__ import annotations

import contextlib
import io
import sys
import warnings


def checker(lesson_id: str):
    def check(exercise: str, obj) -> float:
        return run_selfcheck(lesson_id, exercise, obj)
    return check


def run_selfcheck(lesson_id: str, exercise: str, obj) -> float:
    import numpy as np

    from .plugin import GradingPlugin, run_checks
    from .student import LocalSubmission

    submission = LocalSubmission({exercise: obj})
    plugin = GradingPlugin({lesson_id: submission}, exercises={lesson_id: {exercise}})
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        run_checks(plugin, [lesson_id])
    print(verdict(exercise, plugin.results))
    from .kernel_state import note
    hint = note(lesson_id, exercise, obj)        # names only this kernel has, in one line
    if hint:
        print(hint)
    return float(sum(t["score"] for t in plugin.results))


def verdict(exercise: str, tests: list[dict]) -> str:
    score = sum(t["score"] for t in tests)
    total = sum(t["max_score"] for t in tests)
    if not tests:
        return f"{exercise}: no checks found for this exercise"
    if score == total:
        if len(tests) == 1:  # "all 1 checks" is not English
            return f"{exercise}: passed all checks (1 of 1; {score:g}/{total:g} points)."
        return f"{exercise}: passed all {len(tests)} checks ({score:g}/{total:g} points)."
    from .diagnosis import split_summary
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use check(...) from a lesson notebook")
