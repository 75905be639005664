"""The self-check cells: run the autograder's own checks on a function, inside the notebook.

A lesson's setup cell does `check = checker("<lesson_id>")`; the cell after each stub calls
`check("<grade_id>", obj)`. It prints a short verdict (with `verbose=True`, every check and all
it saw) and returns the points earned (what the student sees). It is never the grade:
`nbgrader autograde` configured with deliver/nbgrader_grades.py runs no kernel and writes the
sandboxed grader's verdict and points into these cells; an unconfigured one, which runs them in
the student's kernel, gets 0 and the line to add (UNCONFIGURED_AUTOGRADE). `checker` first says
which grader runs (origin: the student kit's own copy, or the course's). Nothing is written to stderr.

It speaks the notebook's language (`language_of`): `checker(lesson_id, lang=...)`, else
$AUTOGRADER_LANG, else the `language` the Chinese lessons carry in their metadata (release writes
it), else English. The language is cosmetic: the points are the same in every one.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings

from autograder.i18n import ENV, N_, gettext_, language


def checker(lesson_id: str, lang: str | None = None):
    lang = language_of(lesson_id, lang)
    print(origin(lang))

    def check(exercise: str, obj, verbose: bool = False) -> float:
        if os.environ.get("NBGRADER_EXECUTION") == "autograde":
            print(gettext_(UNCONFIGURED_AUTOGRADE, lang))
            return 0.0
        return run_selfcheck(lesson_id, exercise, obj, verbose=verbose, lang=lang)
    return check


NOTEBOOK_BYTES = 50_000_000     # a notebook larger than this is not read for its language


def language_of(lesson_id: str, chosen: str | None = None) -> str | None:
    """The self-check's language: `chosen`, else $AUTOGRADER_LANG, else the metadata `language` of
    the notebook this kernel runs (Jupyter names it in JPY_SESSION_NAME; else the lesson's notebook
    in the working folder, where Jupyter starts a notebook's kernel), else English (None)."""
    if chosen is not None or os.environ.get(ENV):
        return language(chosen)
    from pathlib import Path
    for candidate in (os.environ.get("JPY_SESSION_NAME"), f"{lesson_id}.ipynb"):
        try:
            path = Path(candidate) if candidate else None
            if path is None or path.suffix != ".ipynb" or not path.is_file() or \
                    path.stat().st_size > NOTEBOOK_BYTES:
                continue
            import json
            with open(path, encoding="utf-8") as f:
                tag = json.load(f).get("metadata", {}).get("language")
            return language(tag) if isinstance(tag, str) else None
        except (OSError, ValueError, AttributeError):
            continue
    return None


def origin(lang: str | None = None) -> str:
    """One line: which grader this kernel's self-checks run (the kit's own, or the course's)."""
    import autograder
    from pathlib import Path
    package = Path(autograder.__file__).resolve().parent
    try:
        beside = package.parent == Path.cwd().resolve().parent
    except OSError:        # the working folder is gone
        beside = False
    where = "../autograder" if beside else str(package)
    edition = getattr(autograder, "EDITION", "?")
    edition = {"course": N_("course"), "student kit": N_("student kit")}.get(edition, edition)
    return gettext_(N_("Self-checks: {where} ({edition} {version})"), lang).format(
        where=where, edition=gettext_(edition, lang), version=getattr(autograder, "__version__", "?"))


# nbgrader sets NBGRADER_EXECUTION=autograde in the kernels `nbgrader autograde` starts (its Execute
# step). Configured with deliver/nbgrader_grades.configure, autograde starts no kernel, so a
# self-check that sees it runs where the student's code runs and cannot be the grade.
UNCONFIGURED_AUTOGRADE = N_(
    "0 points: nbgrader autograde ran this self-check in the student's own kernel, where the "
    "student's code can change what it reports, so it awards nothing. Instructor: add these lines "
    "to nbgrader_config.py and autograde again (the sandboxed grader then scores this cell):\n"
    "    from autograder.deliver.nbgrader_grades import configure\n"
    "    configure(c)")


def run_selfcheck(lesson_id: str, exercise: str, obj, verbose: bool = False, lang: str | None = None) -> float:
    import numpy as np

    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.student import LocalSubmission

    submission = LocalSubmission({**helpers_of(lesson_id, exercise, obj), exercise: obj})
    # Never the course secret: the self-check runs in the student's own kernel, where nothing
    # hidden may be computed or held. Grades come from the sandboxed grader only (for nbgrader:
    # deliver/nbgrader_grades.py); here the public inputs, as in the student kit.
    plugin = GradingPlugin({lesson_id: submission}, exercises={lesson_id: {exercise}}, secret=None)
    with warnings.catch_warnings(), np.errstate(all="ignore"), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        run_checks(plugin, [lesson_id])
    from autograder.report.results import verdict
    print(verdict(exercise, plugin.results, verbose=verbose, lang=lang or "en"))
    from autograder.load.kernel_state import note
    hint = note(lesson_id, exercise, obj)        # names only this kernel has, in one line
    if hint:
        from autograder.i18n import language, localize
        print(localize(hint, language(lang or "en")))
    return float(sum(t["score"] for t in plugin.results))


def helpers_of(lesson_id: str, exercise: str, obj) -> dict:
    """The lesson's other graded names as the notebook defines them where `obj` looks them up (a
    function's globals, a class's methods' globals): the checks judge a helper the exercise calls
    (generate's next_token_probs) as grading does, and grade the exercise with the reference's
    answers in its place when it is wrong, so the self-check says the same words as `grade`."""
    from autograder.course import COURSE
    lesson = COURSE.get(lesson_id)
    scope = getattr(obj, "__globals__", None)
    if scope is None and isinstance(obj, type):
        scope = next((f.__globals__ for f in vars(obj).values() if hasattr(f, "__globals__")), None)
    if lesson is None or not isinstance(scope, dict):
        return {}
    return {name: scope[name] for name in lesson.exercises if name != exercise and name in scope}


if __name__ == "__main__":  # pragma: no cover
    sys.exit("use check(...) from a lesson notebook")
