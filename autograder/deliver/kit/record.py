"""Record: run every check against the reference on the public inputs and keep each answer it asked for.

The reference namespace, `checking.reference_output` and the fingerprints module are wrapped by
a recorder that keeps each answer under a digest of the question (grading/recorded.py replays
them in the kit). Every fingerprint a check offers is evaluated, matched or not.
"""
from __future__ import annotations

import copy
import io
import json
import zipfile

import numpy as np

from autograder.course import COURSE
from autograder.grading import recorded

ZIP_DATE = (2024, 1, 1, 0, 0, 0)


class _Tape:
    MAX_CALLS, MAX_VALUES = 4000, 500_000      # helper calls kept per lesson and name; numbers per call

    def __init__(self):
        self.entries: dict[str, tuple[str, object]] = {}   # digest -> (kind, value)
        # {lesson: {helper: {digest of the call: (args, kwargs, the reference's answer)}}}: what a stand-in
        # asks while an exercise is graded on its own (grading/independence.py), answered in the kit
        self.calls: dict[str, dict[str, dict]] = {}

    def put_call(self, lesson: str, name: str, args, kwargs, answer) -> None:
        found = self.calls.setdefault(lesson, {}).setdefault(name, {})
        if len(found) >= self.MAX_CALLS or not _is_data([args, kwargs, answer]):
            return
        if sum(int(np.asarray(a).size) for a in _arrays([args, kwargs])) > self.MAX_VALUES:
            return
        found.setdefault(recorded.digest(list(args), dict(kwargs)), copy.deepcopy((list(args), dict(kwargs), answer)))

    def put(self, key: str, kind: str, value=None):
        old = self.entries.get(key)
        if old is not None and old[0] != kind:
            raise RuntimeError(f"the same question got two kinds of answer ({old[0]}, {kind}): not replayable")
        self.entries[key] = (kind, value)


def _arrays(value):
    """The arrays and tensors in `value` (lists, tuples, dicts of them)."""
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    return [value] if hasattr(value, "shape") else []


def _helper_recorders(tape, lesson_id: str, ns: dict, submission):
    """[(globals, name, function)] to put back: in the reference run, each helper an exercise of the lesson
    calls (grading/independence.py, helpers) is wrapped in its exercise's globals, and each call it gets
    while another exercise is graded is kept, with the reference's answer (the calls a correct exercise
    makes, which the kit answers when the student's helper is wrong)."""
    import functools
    import inspect

    from autograder.grading import independence
    patched = []
    for exercise in COURSE[lesson_id].exercises:
        obj = ns.get(exercise)
        scope = getattr(obj, "__globals__", None)
        if scope is None and isinstance(obj, type):
            scope = next((f.__globals__ for f in vars(obj).values() if hasattr(f, "__globals__")), None)
        for name in independence.helpers(lesson_id, exercise):
            if scope is None or not callable(scope.get(name)) or getattr(scope[name], "_recording", False):
                continue
            real = scope[name]
            signature = inspect.signature(real)

            def recording(*args, _real=real, _name=name, _signature=signature, **kwargs):
                answer = _real(*args, **kwargs)
                if submission.exercise != _name:
                    bound = _signature.bind(*args, **kwargs)
                    bound.apply_defaults()
                    tape.put_call(lesson_id, _name, list(bound.args), dict(bound.kwargs), answer)
                return answer
            recording = functools.wraps(real)(recording)
            recording._recording = True
            patched.append((scope, name, real))
            scope[name] = recording
    return patched


def _unwrap(x):
    if isinstance(x, (_RecCall, _RecObject)):
        return x._real
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _is_data(value) -> bool:
    try:
        recorded.encode(value, [], {})
        return True
    except TypeError:
        return False


class _RecCall(recorded.Handle):
    def __init__(self, tape, key, what, real, owner=None):
        self._tape, self.key, self._what, self._real, self._owner = tape, key, what, real, owner

    def __call__(self, *args, **kwargs):
        owner = self._owner
        key = recorded.digest(owner.key if owner else self.key, self._what if owner else "", args, kwargs)
        if owner is not None:
            owner.key = key
        try:
            result = self._real(*_unwrap(args), **_unwrap(kwargs))
        except Exception as exc:
            self._tape.put(key, "raised", [type(exc).__name__, str(exc)])
            raise
        if owner is not None and result is owner._real:
            self._tape.put(key, "self")
            return owner
        if _is_data(result):
            self._tape.put(key, "value", copy.deepcopy(result))   # a check may change it in place later
            return result
        self._tape.put(key, "object")
        return _RecObject(self._tape, key, self._what, result)


class _RecObject(recorded.Handle):
    def __init__(self, tape, key, what, real):
        self._tape, self.key, self._what, self._real = tape, key, what, real

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._real, name)
        key = recorded.digest(self.key, "getattr", name)
        if callable(value) and not _is_data(value):
            self._tape.put(key, "callable")
            return _RecCall(self._tape, self.key, name, value, owner=self)
        self._tape.put(key, "value", copy.deepcopy(value))
        return value

    def __call__(self, *args, **kwargs):
        return _RecCall(self._tape, self.key, "__call__", self._real, owner=self)(*args, **kwargs)


class _RecNamespace:
    def __init__(self, tape, scope, real):
        self._tape, self._scope, self._real = tape, scope, real

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self._real, name)
        key = recorded.digest("attr", self._scope, name)
        if callable(value) and not _is_data(value):
            self._tape.put(key, "callable")
            return _RecCall(self._tape, recorded.digest("call", self._scope, name), f"{self._scope}.{name}", value)
        self._tape.put(key, "value", copy.deepcopy(value))
        return value


def _bound_recorder(tape, scope, name, fn):
    """fn, recording each answer under its bound arguments (recorded.replay_bound answers it)."""
    import inspect
    signature = inspect.signature(fn)

    def recording(*args, **kwargs):
        bound = signature.bind(*_unwrap(args), **_unwrap(kwargs))
        bound.apply_defaults()
        canonical = signature.bind(*args, **kwargs)
        canonical.apply_defaults()
        key = recorded.bound_key(scope, name, canonical.arguments)
        result = fn(*bound.args, **bound.kwargs)
        if not _is_data(result):
            raise TypeError(f"{scope}.{name} answered with a {type(result).__name__}, not data")
        tape.put(key, "value", copy.deepcopy(result))
        return result
    return recording


def _eager(expect_array):
    """expect_array that first evaluates every fingerprint it is offered (so each is recorded)."""
    from autograder.grading.compare import Fingerprints

    def eager_expect_array(got, expected, *args, mutants=None, **kwargs):
        if isinstance(mutants, Fingerprints):
            makes = [make for _, _, make in mutants.candidates()]
        elif isinstance(mutants, dict):
            makes = list(mutants.values())
        else:
            makes = [item[1] for item in (mutants or [])]   # (mistake, make[, what the code does])
        for make in makes:
            try:
                with np.errstate(all="ignore"):
                    make()
            except Exception:
                pass
        return expect_array(got, expected, *args, mutants=mutants, **kwargs)
    return eager_expect_array


def _recording_plugin(tape, submissions, eager: bool = True, exercises=None):
    import pytest

    from autograder.grading import checking
    from autograder.grading import compare
    from autograder.diagnose import fingerprints
    from autograder.grading.plugin import GradingPlugin
    from autograder.grading.reference import load_reference

    rec_fingerprints = _RecNamespace(tape, "mutants", fingerprints)
    swaps = {id(fingerprints): rec_fingerprints,
             id(checking.reference_output): _bound_recorder(tape, "checking", "reference_output",
                                                            checking.reference_output),
             id(compare.expect_array): _eager(compare.expect_array) if eager else compare.expect_array}

    class Recording(GradingPlugin):
        def __init__(self):
            super().__init__(submissions, exercises=exercises, secret=None)   # the public inputs, whatever the secret
            self.patched: list[tuple[object, str, object]] = []

        @pytest.fixture(scope="module")
        def reference(self, request):
            lesson = request.module.LESSON
            return _RecNamespace(tape, f"reference:{lesson}", load_reference(lesson))

        def pytest_collection_modifyitems(self, session, config, items):
            modules = {id(checking): checking}
            for item in items:
                modules[id(item.module)] = item.module
            for name, module in list(__import__("sys").modules.items()):
                if name.startswith("autograder.checks") and module is not None:
                    modules[id(module)] = module
            for module in modules.values():
                for name, value in list(vars(module).items()):
                    if id(value) in swaps:
                        self.patched.append((module, name, value))
                        setattr(module, name, swaps[id(value)])
            super().pytest_collection_modifyitems(session, config, items)

        def restore(self):
            for module, name, value in reversed(self.patched):
                setattr(module, name, value)
            self.patched.clear()

    return Recording()


def _namespaces(lesson_id: str, corpus: bool):
    """[(label, namespace)]: the reference, then each corpus entry of the lesson (its cells run
    over the reference's namespace, as the released notebook would run them)."""
    from autograder.grading.reference import load_reference
    base = vars(load_reference(lesson_id))
    found = [("reference", dict(base))]
    if not corpus:
        return found
    from autograder.classroom.accuracy import CORPUS, load
    if not CORPUS.exists():
        return found
    for entry in load(CORPUS):
        if entry.lesson != lesson_id or entry.expect == "correct":
            continue
        ns = dict(base)
        try:
            for grade_id in COURSE[lesson_id].exercises:
                if grade_id in entry.cells:
                    exec(compile(entry.cells[grade_id], f"<corpus {entry.name}: {grade_id}>", "exec"), ns)
        except Exception:
            continue
        found.append((entry.name, ns))
    return found


def record(lessons: list[str], corpus: bool = True) -> _Tape:
    """Run the checks of `lessons` and keep every answer they asked for."""
    from autograder.grading.compare import Fingerprints
    from autograder.grading.student import LocalSubmission
    from autograder.grading import independence
    tape = _Tape()
    recent = list(Fingerprints.recent)
    independence.RECORDING = given = []
    try:
        for lesson_id in lessons:
            for label, ns in _namespaces(lesson_id, corpus):
                # the reference run evaluates every fingerprint offered; a corpus entry records the path
                # its own diagnosis takes (from the same starting state every time: deterministic)
                Fingerprints.recent[:] = []
                # The reference's memory checks run untraced (here and with its helpers recorded below):
                # its peak is under the limit (the self-check in a kernel, which traces, gives it full
                # marks) and is not kept. Traced, the recordings the helper run holds counted in its peak
                # (lesson 10: 44.7 and 60.4 MB against 40 MiB), so it "failed" and recorded that failure's
                # 3040 stand-in answers, for 13 s. A corpus entry's peak may decide its diagnosis's path,
                # as it will in the kit: traced.
                reference = label == "reference"
                _run(_recording_plugin(tape, {lesson_id: LocalSubmission(ns, measure_peak=not reference)},
                                       eager=reference), lesson_id)
                if reference and (calling := _calling(lesson_id)):
                    # again, the exercises that call a helper alone, each helper call recorded
                    submission = LocalSubmission(ns, measure_peak=False)
                    patched = _helper_recorders(tape, lesson_id, ns, submission)
                    try:
                        _run(_recording_plugin(tape, {lesson_id: submission}, eager=False,
                                               exercises={lesson_id: calling}), lesson_id)
                    finally:
                        for scope, name, real in reversed(patched):
                            scope[name] = real
                # the answers the grader gave a corpus entry's stand-ins (its helper wrong)
                for lesson, name, args, kwargs, answer in given:
                    tape.put_call(lesson, name, args, kwargs, answer)
                given.clear()
    finally:
        Fingerprints.recent[:] = recent
        independence.RECORDING = None
    return tape


def _calling(lesson_id: str) -> set[str]:
    """The exercises of the lesson that may call another one (grading/independence.py, helpers)."""
    from autograder.grading import independence
    return {e for e in COURSE[lesson_id].exercises if independence.helpers(lesson_id, e)}


def _run(plugin, lesson_id: str) -> None:
    import contextlib
    import warnings

    from autograder.grading.plugin import run_checks
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            run_checks(plugin, [lesson_id])
    finally:
        plugin.restore()


def tape_files(tape: _Tape) -> dict[str, bytes]:
    """index.json and arrays.npz, in an order that depends on the questions only."""
    arrays: list[np.ndarray] = []
    seen: dict = {}
    answers = {}
    for key in sorted(tape.entries):
        kind, value = tape.entries[key]
        if kind == "value":
            answers[key] = {"value": recorded.encode(value, arrays, seen)}
        elif kind == "raised":
            answers[key] = {"raised": value}
        else:
            answers[key] = {"kind": kind}
    calls = {lesson: {name: [recorded.encode(list(found[key]), arrays, seen) for key in sorted(found)]
                      for name, found in sorted(names.items())}
             for lesson, names in sorted(tape.calls.items())}
    index = json.dumps({"format": 1, "answers": answers, "calls": calls}, sort_keys=True,
                       separators=(",", ":")) + "\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for i, a in enumerate(arrays):
            npy = io.BytesIO()
            np.lib.format.write_array(npy, a, allow_pickle=False)
            info = zipfile.ZipInfo(f"a{i}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, npy.getvalue())
    return {"index.json": index.encode(), "arrays.npz": buf.getvalue()}
