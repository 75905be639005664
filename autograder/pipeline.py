"""Grade one student: load each lesson notebook, isolate it, run the checks, collect results.

The result is a Gradescope results.json object (see ../shared/COURSE_SPEC.md).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

# Everything the grader imports, imported before any student code runs: where the worker gets no
# read-only view of the course (see worker.protect_files), a module edited on disk by a
# submission is then never loaded.
from autograder.grading import checking
from autograder.grading import compare
from autograder.diagnose import mistakes
from autograder.diagnose import fingerprints
from autograder.report import results
from autograder.grading import tolerances  # noqa: F401
from autograder.course import COURSE
from autograder.load.notebook import build_program
from autograder.grading.plugin import GradingPlugin, run_checks
from autograder.i18n import N_
from autograder.isolate.sandbox import DEFAULT_TIME_LIMIT, Sandbox, SandboxBroken
from autograder.grading.student import ExerciseUnavailable
from autograder.isolate.submission import Budget, Submission


LESSON_NOTE = N_("{lesson}: {note}")


class BrokenSubmission:
    """A lesson that cannot be graded (not handed in, or its notebook could not be read). Whatever a
    check asks it, a request, its code's digest or anything else, the answer is the reason, as an
    ExerciseUnavailable: never an error of ours (a lesson not handed in is "not submitted" on every
    check, however the check reaches the student)."""

    program = None            # what the pipeline reads after the checks: nothing ran
    gave_up = None
    skip_cells = frozenset()

    def __init__(self, reason: str, prefix: str = N_("the notebook could not be graded: {reason}")):
        self.reason, self.prefix = reason, prefix
        self.faults: dict = {}
        self.cell_errors: dict[str, str] = {}

    def _unavailable(self) -> ExerciseUnavailable:
        return ExerciseUnavailable(self.prefix.format(reason=self.reason) if self.prefix else self.reason, kind="fatal")

    def begin_exercise(self, exercise):
        pass

    def request(self, op, **args):
        raise self._unavailable()

    def source_digest(self) -> str:
        raise self._unavailable()

    def why_missing(self, name):
        return self.reason

    def close(self):
        pass

    def __getattr__(self, name):   # any other question a check may ask
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._unavailable()


DEFAULT_STUDENT_BUDGET = 300.0   # seconds for all of one student's lessons together


def grade_student(notebooks: dict[str, Path], sandbox: Sandbox,
                  time_limit: float = DEFAULT_TIME_LIMIT, missing: dict[str, str] | None = None,
                  budget: float = DEFAULT_STUDENT_BUDGET) -> dict:
    """Grade `notebooks` ({lesson_id: path}) of one student. Never raises.

    `missing` ({lesson_id: reason}) lists lessons that count but were not handed in: each of
    their checks fails with the reason, so the maximum score is the same for everyone.
    If the sandboxed worker itself breaks down, it is replaced and the student graded again,
    once. Every process the student's code started is gone when this returns.
    """
    for attempt in (1, 2):
        try:
            result, broken = _grade_once(notebooks, sandbox, time_limit, missing or {}, budget)
        except Exception as exc:   # a bug of ours must cost this student a clear message, not the class
            sandbox.close()
            why = f"the autograder failed while grading this submission ({type(exc).__name__}: {exc})"
            return _grade_nothing(notebooks, missing or {}, why)
        if not broken:
            return result
        sandbox.close()   # a fresh worker is started on the next spawn
        if attempt == 2:
            result.setdefault("output", "")
            result["output"] = (result["output"] + "\nthe sandboxed worker broke down twice while grading "
                                "this submission; the results above may be incomplete").strip()
            return result
    raise AssertionError("unreachable")


def _grade_once(notebooks, sandbox, time_limit, missing, budget_seconds) -> tuple[dict, bool]:
    submissions, notes = {}, []
    budget = Budget(budget_seconds)
    for lesson_id, why in missing.items():
        submissions[lesson_id] = BrokenSubmission(why, prefix="")
    for lesson_id, path in sorted(notebooks.items()):
        try:
            program = build_program(Path(path), COURSE[lesson_id])
        except Exception as exc:   # a notebook that breaks our reading costs only itself
            # build_program says what is wrong with a notebook in program.fatal and its notes: an
            # exception from it is a bug of ours, never the student's (a genuinely unreadable file,
            # not JSON or not a notebook, is a fatal message that says why)
            program = SimpleNamespace(fatal="autograder error (not the student's fault): the grader's notebook "
                                            f"reader failed on this notebook ({type(exc).__name__}: "
                                            f"{str(exc)[:200]}); please report it", notes=[])
        notes.extend(LESSON_NOTE.format(lesson=lesson_id, note=n) for n in program.notes)
        if program.fatal:
            notes.append(LESSON_NOTE.format(lesson=lesson_id, note=program.fatal))
            submissions[lesson_id] = BrokenSubmission(program.fatal)
        else:
            submissions[lesson_id] = Submission(program, sandbox, time_limit, budget)
    plugin = GradingPlugin(submissions)
    try:
        run_checks(plugin, sorted(submissions))
    finally:
        for sub in submissions.values():
            try:
                sub.close()
            except SandboxBroken:   # the worker died under this student: regraded, never blamed
                plugin.sandbox_broken = True
    notes.extend(f"autograder error (not the student's fault): {e}" for e in plugin.internal_errors)
    if budget.ran_out_at is not None:   # said once, however many exercises it cost
        notes.append(N_("the time budget of {seconds} s for this whole submission ran out ({where}): nothing of it "
                        "ran after that, and every exercise not graded by then failed").format(
            seconds=f"{budget.total:g}", where=budget.ran_out_at))
    for lesson_id, sub in submissions.items():
        if getattr(sub, "gave_up", None):
            notes.append(LESSON_NOTE.format(lesson=lesson_id, note=sub.gave_up))
    for lesson_id, sub in submissions.items():   # a cell cut for its time (or memory) is named
        for label in sorted(getattr(sub, "skip_cells", ())):
            notes.append(N_("{lesson}: {label}: {reason}; the cells after it still ran").format(
                lesson=lesson_id, label=label, reason=sub.cell_errors.get(label, N_("was skipped"))))
    for lesson_id, sub in submissions.items():   # the lesson's own locked cells must always run
        for cell in getattr(getattr(sub, "program", None), "cells", None) or []:
            if cell.kind == "setup" and cell.label in getattr(sub, "cell_errors", {}):
                notes.append(f"autograder error (not the student's fault): {lesson_id}'s setup cell "
                             f"failed in the sandbox: {sub.cell_errors[cell.label]}")
    return results_object(plugin.results, notes), plugin.sandbox_broken


def _grade_nothing(notebooks, missing, why: str) -> dict:
    """Every check of the student's lessons failed with `why` (same maximum as everyone)."""
    submissions = {lid: BrokenSubmission(why, prefix="") for lid in [*notebooks, *missing]}
    plugin = GradingPlugin(submissions)
    try:
        run_checks(plugin, sorted(submissions))
    except Exception:
        return results_object([], [why])
    return results_object(plugin.results, [why])


def results_object(tests: list[dict], notes: list[str]) -> dict:
    """Gradescope's results object. Texts a student can influence (their exception messages, in a
    check's output or a note) have control characters made visible (results.terminal_safe) and are
    cut to a bounded size (results.bounded), and Gradescope is told to show every output as plain
    text, never as Markdown or HTML."""
    for test in tests:
        test["output"] = results.terminal_safe(test.get("output", ""))
        test["output_format"] = "text"
    result = {
        "score": round(sum(t["score"] for t in tests), 6),
        "max_score": round(sum(t["max_score"] for t in tests), 6),
        "output_format": "text",
        "test_output_format": "text",
        "tests": tests,
    }
    if notes:
        result["output"] = results.terminal_safe("\n".join(notes))
    return results.bounded(result)
