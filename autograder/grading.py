"""Grade one student: load each lesson notebook, isolate it, run the checks, collect results.

The result is a Gradescope results.json object (see ../shared/COURSE_SPEC.md).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

# Everything the grader imports, imported before any student code runs: where the worker gets no
# read-only view of the course (see worker.protect_files), a module edited on disk by a
# submission is then never loaded.
from . import checking, compare, mistakes, mutants, report, tolerances  # noqa: F401
from .course import COURSE
from .notebook import build_program
from .plugin import GradingPlugin, run_checks
from .sandbox import DEFAULT_TIME_LIMIT, Sandbox
from .student import ExerciseUnavailable, Submission


class BrokenSubmission:
    """A lesson whose notebook could not be read at all: every check fails with the reason."""

    def __init__(self, program, prefix: str = "the notebook could not be graded: "):
        self.program, self.prefix = program, prefix
        self.faults = {}

    def begin_exercise(self, exercise):
        pass

    def request(self, op, **args):
        raise ExerciseUnavailable(self.prefix + self.program.fatal, kind="fatal")

    def why_missing(self, name):
        return self.program.fatal

    def close(self):
        pass


def grade_student(notebooks: dict[str, Path], sandbox: Sandbox,
                  time_limit: float = DEFAULT_TIME_LIMIT, missing: dict[str, str] | None = None) -> dict:
    """Grade `notebooks` ({lesson_id: path}) of one student.

    `missing` ({lesson_id: reason}) lists lessons that count but were not handed in: each of
    their checks fails with the reason, so the maximum score is the same for everyone.
    """
    submissions, notes = {}, []
    for lesson_id, why in (missing or {}).items():
        submissions[lesson_id] = BrokenSubmission(SimpleNamespace(fatal=why), prefix="")
    for lesson_id, path in sorted(notebooks.items()):
        program = build_program(Path(path), COURSE[lesson_id])
        notes.extend(f"{lesson_id}: {n}" for n in program.notes)
        if program.fatal:
            notes.append(f"{lesson_id}: {program.fatal}")
            submissions[lesson_id] = BrokenSubmission(program)
        else:
            submissions[lesson_id] = Submission(program, sandbox, time_limit)
    plugin = GradingPlugin(submissions)
    try:
        run_checks(plugin, sorted(submissions))
    finally:
        for sub in submissions.values():
            sub.close()
    notes.extend(f"autograder error (not the student's fault): {e}" for e in plugin.internal_errors)
    return results_object(plugin.results, notes)


def results_object(tests: list[dict], notes: list[str]) -> dict:
    result = {
        "score": round(sum(t["score"] for t in tests), 6),
        "max_score": round(sum(t["max_score"] for t in tests), 6),
        "tests": tests,
    }
    if notes:
        result["output"] = "\n".join(notes)
    return result
