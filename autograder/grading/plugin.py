"""The pytest plugin that turns the check modules into a grade.

Checks in autograder/checks/ are ordinary pytest tests: a module sets `LESSON`, each test
carries `@pytest.mark.exercise("<grade_id>", points=N)` and asks for the fixtures below:
  student    the student's objects for the module's lesson (see student.py)
  reference  the reference solution's namespace (see reference.py)
  rng        a NumPy Generator seeded from the test's name (same inputs every run); with a
             course secret (see course_secret), from the secret and the name: hidden inputs
  secret_key None, or with a course secret a key of the lesson's own drawn from it
The plugin keeps only tests of the lessons being graded and records one Gradescope test
entry per check, naming the mistake when the check recognised one.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.diagnose import root_cause
from autograder.grading.compare import Mismatch
from autograder.course import CHECKS
from autograder.i18n import N_
from autograder.grading.reference import load_reference
from autograder.run.bounds import CHECK_OUTPUT, MESSAGE, clip
from autograder.run.errors import SandboxBroken, StudentError, SubmissionFault
from autograder.run.wire import ANSWER_TOO_LARGE
from autograder.grading.student import ExerciseUnavailable, Student


def explain_failure(exc: BaseException, exercise: str) -> tuple[str, str | None, bool]:
    """(output for the student, mistake id or None, whether it is the grader's own fault)."""
    from autograder.diagnose.mistakes import describe
    if isinstance(exc, Mismatch):
        return str(exc), exc.mistake, False
    if isinstance(exc, SubmissionFault):
        mistake = {"timeout": "time-limit", "memory": "memory-limit", "crash": "process-exit"}[exc.kind]
        return N_("{exercise}: {reason}.").format(exercise=exercise, reason=exc) + f" {describe(mistake)}", mistake, False
    if isinstance(exc, SandboxBroken):
        return N_("the autograder's sandbox broke down on this check (not your fault): {reason}").format(
            reason=exc), None, True
    if isinstance(exc, ExerciseUnavailable):
        return str(exc), None, False
    if isinstance(exc, StudentError):
        if exc.type == "NotImplementedError":
            return (N_("{exercise} still raises NotImplementedError: the stub is unchanged.").format(exercise=exercise)
                    + f" {describe('not-implemented')}"), "not-implemented", False
        if exc.type == ANSWER_TOO_LARGE:   # the call returned; its answer could not be sent
            return (N_("{exercise}: {reason}. Return only what the exercise asks for (its docstring says the type "
                       "and shape).").format(exercise=exercise, reason=exc.message)), None, False
        if exc.type in ("SystemExit", "KeyboardInterrupt"):
            return (N_("{exercise} raised {error}.").format(exercise=exercise, error=exc.type)
                    + f" {describe('process-exit')}"), "process-exit", False
        text = N_("{exercise} raised an exception:").format(exercise=exercise) + "\n" + exc.describe()
        if exc.type == "TypeError" and _called_wrongly(exc.message, exercise):
            return f"{text}\n{describe('wrong-signature')}", "wrong-signature", False
        return text, None, False
    if isinstance(exc, AssertionError):  # a plain assert in a check
        return f"{exercise}: {exc}", None, False
    return N_("the autograder failed on this check (not your fault; please report it): {reason}").format(
        reason=repr(exc)), None, True


_CALL_ERROR = re.compile(r"([\w.]+)\(\) (?:got an unexpected keyword argument|got multiple values for|"
                         r"takes \d+|takes no arguments|takes from|missing \d+ required)")


def _called_wrongly(message: str, exercise: str) -> bool:
    """A TypeError about the arguments of the exercise itself ("softmax() got an unexpected keyword
    argument 'axis'", "MultiHeadAttention.forward() takes 2 positional arguments..."), not one its
    body raised calling something else ("_sum() got an unexpected keyword argument 'keepdim'"):
    only the first is fixed by keeping the stub's signature."""
    m = _CALL_ERROR.match(message)
    return bool(m) and m.group(1).split(".")[0] == exercise


SECRET_FILE = ".course-secret"     # in the repository's root, git-ignored; see README (instructors)


def inputs_rng(test_name: str, secret: bytes | None = None) -> np.random.Generator:
    """A check's inputs: from its name alone (public: the kit's), or from the secret and its name."""
    name = test_name.encode()
    digest = hmac.new(secret, name, hashlib.sha256).digest() if secret else hashlib.sha256(name).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def secret_path() -> Path:
    from autograder.course import ROOT
    return Path(os.environ.get("AUTOGRADER_SECRET_FILE") or ROOT / SECRET_FILE)


def course_secret() -> bytes | None:
    """The key hidden grading inputs derive from: $AUTOGRADER_SECRET, else the file
    $AUTOGRADER_SECRET_FILE or <repository>/.course-secret (the Gradescope bundle carries it).
    None without one (a self-learner's clone: public inputs, as the self-checks use), and always
    in the student kit, whose recorded answers are for the public inputs only."""
    from autograder.grading import reference
    if getattr(reference, "PUBLIC_INPUTS_ONLY", False):
        return None
    value = os.environ.get("AUTOGRADER_SECRET", "").strip()
    if not value:
        try:
            value = secret_path().read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
    return value.encode() or None


_COURSE_SECRET = object()


class GradingPlugin:
    def __init__(self, submissions: dict, exercises: dict[str, set[str]] | None = None,
                 secret: bytes | None | object = _COURSE_SECRET):
        self.submissions = submissions        # lesson_id -> Submission / LocalSubmission
        self.exercises = exercises            # lesson_id -> grade_ids to keep (None: all)
        self.secret = course_secret() if secret is _COURSE_SECRET else secret   # None: public inputs
        self.results: list[dict] = []
        self.internal_errors: list[str] = []
        self.sandbox_broken = False           # the worker itself failed: grade_student regrades

    def pytest_configure(self, config):
        # Failures are explained by explain_failure(); nobody reads pytest's own traceback here.
        # Its default style re-parses each check's source per failure (~40 % of grading time).
        config.option.tbstyle = "value"

    # -- fixtures ----------------------------------------------------------------------
    @pytest.fixture(scope="module")
    def student(self, request):
        return Student(self.submissions[request.module.LESSON])

    @pytest.fixture(scope="module")
    def reference(self, request):
        return load_reference(request.module.LESSON)

    @pytest.fixture
    def rng(self, request):
        return inputs_rng(request.node.nodeid.split("::")[-1], self.secret)

    @pytest.fixture(scope="module")
    def secret_key(self, request):
        """None without a course secret (public inputs, as in the kit); else a key drawn from the
        secret and the module's lesson, the same for every check of the lesson, from which a check
        draws what must stay hidden (lesson 04's example, lesson 06's order of subjects)."""
        if not self.secret:
            return None
        return hmac.new(self.secret, b"lesson:" + request.module.LESSON.encode(), hashlib.sha256).digest()

    # -- collection --------------------------------------------------------------------
    def pytest_collection_modifyitems(self, session, config, items):
        keep, drop = [], []
        for item in items:
            lesson = getattr(item.module, "LESSON", None)
            marker = item.get_closest_marker("exercise")
            wanted = lesson in self.submissions and marker is not None and (
                self.exercises is None or marker.args[0] in self.exercises.get(lesson, ()))
            (keep if wanted else drop).append(item)
        items[:] = keep
        if drop:
            config.hook.pytest_deselected(items=drop)

    def pytest_runtest_setup(self, item):
        marker = item.get_closest_marker("exercise")
        submission = self.submissions[item.module.LESSON]
        submission.begin_exercise(marker.args[0])
        submission.notes = []         # what the check says whatever its outcome (Student._note)
        submission.pending = []       # input-modified found on the way (student.py, _call): fails the check

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """Run a check so that its exercise earns its own points (independence.py): graded again with
        the reference's answers in place of a wrong helper it calls, with the same inputs."""
        from autograder.grading import independence
        lesson = pyfuncitem.module.LESSON
        exercise = pyfuncitem.get_closest_marker("exercise").args[0]
        if not independence.helpers(lesson, exercise):
            return None                                    # pytest calls it as usual
        names = pyfuncitem._fixtureinfo.argnames
        args = {name: pyfuncitem.funcargs[name] for name in names}

        def run():
            if "rng" in args:                              # the same inputs in every round
                args["rng"] = inputs_rng(pyfuncitem.nodeid.split("::")[-1], self.secret)
            return pyfuncitem.obj(**args)
        reference = args.get("reference") or pyfuncitem._request.getfixturevalue("reference")
        independence.run_check(run, args.get("student") or pyfuncitem._request.getfixturevalue("student"),
                               reference, lesson, exercise)
        return True

    # -- results -----------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and report.failed):
            self._record(item, call, report)

    def _record(self, item, call, report):
        lesson = item.module.LESSON
        marker = item.get_closest_marker("exercise")
        exercise, points = marker.args[0], float(marker.kwargs.get("points", 1))
        doc = (item.function.__doc__ or item.name).strip().splitlines()[0].strip()
        failure = None if report.passed or call.excinfo is None else call.excinfo.value
        failure = with_pending(failure, getattr(self.submissions[lesson], "pending", None) or [])
        passed = report.passed and failure is None
        entry = {
            "name": f"{lesson}: {doc}",
            "score": points if passed else 0.0,
            "max_score": points,
            "status": "passed" if passed else "failed",
            "output": "",
            "tags": [f"lesson:{lesson}", f"exercise:{exercise}"],
        }
        if failure is not None:
            output, mistake, internal = explain_failure(failure, exercise)
            entry["output"] = clip(output, CHECK_OUTPUT)    # evidence quotes what the student's code gave
            if mistake:
                entry["tags"].append(f"mistake:{mistake}")
            if internal:
                self.internal_errors.append(clip(f"{item.nodeid}: {failure!r}", MESSAGE))
            if isinstance(failure, SandboxBroken):
                self.sandbox_broken = True
            root_cause.note(entry, failure)    # every mistake found, for the summary
        notes = getattr(self.submissions[lesson], "notes", None) or []
        for key in ("output", "_line") if notes else ():
            if key in entry:
                entry[key] = "\n".join([entry[key]] + notes if entry[key] else notes)
        self.results.append(entry)


def with_pending(failure, pending: list):
    """The check's failure with the input-modified findings met on the way (student.py, _call): a
    check whose answers were right fails with them alone; one that failed for another reason names
    both, each once. Failures that are not the student's answer (the sandbox, the grader) stay."""
    if not pending:
        return failure
    found = [f for p in pending for f in p.found]
    lines = [p.line for p in pending]
    if failure is None:
        return Mismatch("\n".join(lines), found=found)
    if isinstance(failure, Mismatch):
        if any(m == "input-modified" for m, _ in failure.found):
            return failure
        return Mismatch("\n".join([failure.line] + lines), found=list(failure.found) + found, extra=failure.extra)
    if isinstance(failure, StudentError) and failure.type != "NotImplementedError":
        return Mismatch("\n".join([f"the code raised {failure.describe()}"] + lines), found=found)
    return failure


class PlainFailureReports:
    """A failed check's report without pytest's traceback rendering. Nobody reads that text here
    (explain_failure() writes what the student sees), and building it walks and filters the whole
    traceback of every failure: ~0.1 s per student with many failing checks."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        from _pytest.outcomes import skip
        from _pytest.reports import TestReport
        if call.excinfo is not None and isinstance(call.excinfo.value, (skip.Exception, BaseExceptionGroup)):
            return None                                       # pytest's own handling
        outcome = "passed" if call.excinfo is None else "failed"
        longrepr = None if call.excinfo is None else f"{call.excinfo.typename}: {call.excinfo.value}"
        return TestReport(item.nodeid, item.location, {}, outcome, longrepr, call.when, (),
                          call.duration, call.start, call.stop, item.user_properties)


NO_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


def run_checks(plugin: GradingPlugin, lessons: list[str]) -> GradingPlugin:
    """Run the check modules of `lessons` through pytest with `plugin` attached."""
    paths = [str(CHECKS / f"test_{lesson}.py") for lesson in lessons if (CHECKS / f"test_{lesson}.py").exists()]
    if not paths:
        return plugin
    args = paths + ["-c", str(CHECKS / "pytest.ini"), "--rootdir", str(CHECKS),
                    "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:faulthandler",
                    "-p", "no:warnings", "-p", "no:legacypath", "--capture=no",
            # these two run gc.collect() five times per session to find unraisable exceptions,
            # which with torch loaded costs ~0.9 s per student and reports nothing we use
            "-p", "no:unraisableexception", "-p", "no:threadexception",
            # per-test and per-session work for features the checks never use
            "-p", "no:logging", "-p", "no:doctest", "-p", "no:junitxml", "-p", "no:pastebin",
            "-p", "no:stepwise", "-p", "no:nose", "-p", "no:tmpdir", "-p", "no:monkeypatch",
            "-p", "no:recwarn", "-p", "no:setuponly", "-p", "no:setupplan", "-p", "no:debugging"]
    old_dont_write = sys.dont_write_bytecode
    # No plugin of the environment's other packages: the checks use none, and finding and loading
    # them (anyio's imports trio) cost up to 0.9 s per session, a self-check cell's included.
    old_autoload = os.environ.get(NO_AUTOLOAD)
    os.environ[NO_AUTOLOAD] = "1"
    code = pytest.ExitCode.OK
    try:
        with open(os.devnull, "w") as quiet:
            stdout, sys.stdout = sys.stdout, quiet
            try:
                code = pytest.main(args, plugins=[plugin, PlainFailureReports()])
            finally:
                sys.stdout = stdout
    finally:
        sys.dont_write_bytecode = old_dont_write
        if old_autoload is None:
            os.environ.pop(NO_AUTOLOAD, None)
        else:
            os.environ[NO_AUTOLOAD] = old_autoload
    root_cause.summarise(plugin.results)                  # root cause first, per exercise
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise RuntimeError(f"the checks could not run (pytest exit status {int(code)}); "
                           f"run pytest on {CHECKS} to see why")
    return plugin


def checks_path() -> Path:
    return CHECKS
