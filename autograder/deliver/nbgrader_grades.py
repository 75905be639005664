"""nbgrader's autograde step with the sandboxed grader in place of the student's kernel.

`nbgrader autograde` normally runs each submitted notebook in a kernel of its own, as the
instructor and without any sandbox, and scores an autograded cell from what that cell printed: a
cell with no output and no error earns full marks. The self-check cells would then be the grade,
computed where the student's code runs (a cell that rebinds `check` earns everything, and one that
reads files sees the course). Here no kernel is started at all. `SandboxGrades` takes Execute's
place: it grades the sanitized notebook with `python -m autograder grade`'s own pipeline (the
sandboxed worker, the course's checks, the course secret) in nbgrader's process, then writes each
self-check cell's output as nbgrader reads it: the verdict as text and the points earned as the
cell's result (partial credit). Every autograded cell gets an explicit score, never "no output".

In the course's `nbgrader_config.py`:

    from autograder.deliver.nbgrader_grades import configure
    configure(c)

Then `nbgrader autograde <assignment>` writes the sandboxed grader's scores into the gradebook.
"""
from __future__ import annotations

import atexit
import os
import re
import tempfile
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor
from nbformat import v4
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, IgnorePattern, LimitOutput,
                                    NbGraderPreprocessor, SaveAutoGrades)
from traitlets import Float

# one thread for the grader's tiny tensors, as `python -m autograder` does (see autograder/__main__.py)
os.environ["OMP_NUM_THREADS"] = "1"

CHECK_CALL = re.compile(r"""^\s*check\(\s*["']([A-Za-z_][A-Za-z0-9_]*)["']""", re.M)

_sandbox = None


def _shared_sandbox():
    """One sandboxed worker for the whole autograde run (closed when nbgrader exits)."""
    global _sandbox
    if _sandbox is None:
        from autograder.isolate.sandbox import Sandbox
        _sandbox = Sandbox()
        atexit.register(_sandbox.close)
    return _sandbox


def exercise_of(cell) -> str | None:
    """The exercise a self-check cell checks: `check("<exercise>", ...)` in its source."""
    found = CHECK_CALL.search(cell.get("source", "") if isinstance(cell.get("source"), str)
                              else "".join(cell.get("source", [])))
    return found.group(1) if found else None


class SandboxGrades(NbGraderPreprocessor):
    """Execute's replacement: the sandboxed grader's scores as the autograded cells' outputs."""

    time_limit = Float(10.0, help="Seconds per exercise (python -m autograder grade --time-limit)").tag(config=True)

    def preprocess(self, nb, resources):
        from autograder.course import COURSE
        from autograder.pipeline import grade_student
        from autograder.report.results import verdict
        lesson_id = resources.get("unique_key") or ""
        if lesson_id in COURSE:
            with tempfile.TemporaryDirectory(prefix="nbgrader-sandbox-") as tmp:
                path = Path(tmp) / f"{lesson_id}.ipynb"
                import nbformat
                nbformat.write(nb, str(path))
                result = grade_student({lesson_id: path}, _shared_sandbox(), self.time_limit)
            tests = result.get("tests", [])
            why = None
        else:
            tests, why = [], f"{lesson_id!r} is not a lesson of this course"
        for cell in nb.cells:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell.get("cell_type") != "code" or not meta.get("grade") or meta.get("solution"):
                continue
            exercise = exercise_of(cell)
            mine = [t for t in tests if f"exercise:{exercise}" in t.get("tags", ())] if exercise else []
            if why or not mine:
                reason = why or "this cell is not a self-check the autograder knows"
                cell.outputs = [v4.new_output("stream", name="stdout", text=f"not graded: {reason}\n"),
                                v4.new_output("execute_result", data={"text/plain": "0.0"}, execution_count=None)]
                continue
            score = float(sum(t["score"] for t in mine))
            cell.outputs = [v4.new_output("stream", name="stdout", text=verdict(exercise, mine) + "\n"),
                            v4.new_output("execute_result", data={"text/plain": repr(score)}, execution_count=None)]
        if tests and result.get("output"):
            resources.setdefault("nbgrader", {})["sandbox_notes"] = result["output"]
        return nb, resources


AUTOGRADE_PREPROCESSORS = [SandboxGrades, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                           SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]


def configure(c) -> None:
    """Make `nbgrader autograde` grade in the sandbox: nbgrader's own autograde steps, with
    `SandboxGrades` where Execute (the kernel) was."""
    c.Autograde.autograde_preprocessors = AUTOGRADE_PREPROCESSORS
