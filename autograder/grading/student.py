"""Isolate: a student's lesson, loaded and callable from the checks as if it were local.

`Submission` runs a Program (see notebook.py) in a worker child and keeps a time budget per
exercise; `LocalSubmission` does the same in the current process for the notebooks'
self-check cells. Checks see neither: they get a `Student`, whose attributes are the
student's functions and classes (`student.softmax(x)`, `student.MultiHeadAttention(8, 2)`).
Every answer comes back as data (NumPy arrays, torch tensors, numbers, strings); objects
that are not data, such as a module, come back as `RemoteObject`s.
"""
from __future__ import annotations

import time

import numpy as np

from autograder.course import COURSE
from autograder.i18n import N_
from autograder.run import wire
from autograder.grading.compare import Mismatch, loaded_torch
from autograder.run.executor import Executor
from autograder.run.errors import StudentError, SubmissionFault


class ExerciseUnavailable(Exception):
    """The exercise cannot be graded (its cell is missing, failed to run, or it hung earlier)."""

    def __init__(self, message: str, kind: str = "missing"):
        super().__init__(message)
        self.kind = kind


class LocalSubmission:
    """The student's objects in this very process (the notebook's self-check)."""

    def __init__(self, namespace: dict, measure_peak: bool = True):
        self.executor = Executor(namespace)
        # a memory check's call runs under tracemalloc (its peak, told to the student) unless the caller
        # never reads the peak: the kit's recording of the reference, which tracemalloc slows fourfold
        self.measure_peak = measure_peak
        self.program = None
        self.cell_errors: dict[str, str] = {}
        self.faults: dict = {}
        self.exercise = None
        self.sent = 0
        self.answerer = None                  # a stand-in's questions, while a check runs again (independence.py)
        self.executor.ask = self._ask

    def substitute(self, stand_ins: list[dict]) -> bool:
        """Put the stand-ins in place (requests "substitute"); whether every one is."""
        return all([self.request("substitute", **args) for args in stand_ins])

    def unsubstitute(self) -> dict:
        return self.request("restore")

    def _ask(self, question):
        """A stand-in's question (run/substitute.py, Asks), answered as the sandbox answers it: the
        question and the reply each through the wire, data only."""
        if self.answerer is None:
            return {}
        question = wire.decode(wire.encode(question))
        return wire.decode(wire.encode(self.answerer(question)))

    def begin_exercise(self, exercise: str):
        self.exercise = exercise

    def request(self, op: str, **args):
        self.sent += 1
        frame = self.executor.handle(wire.encode({"op": op, "args": args}))
        reply = wire.decode(frame, objects=lambda n, t: wire.Handle(n, t))
        if reply["ok"]:
            return reply.get("value")
        raise StudentError(reply["error"])

    def why_missing(self, name: str) -> str | None:
        return None

    def source_digest(self) -> str:
        return code_digest([])

    def close(self):
        pass


def code_digest(cells) -> str:
    """A digest of a program's code cells (what lesson 06 draws its order of subjects from)."""
    import hashlib
    return hashlib.sha256("\n".join(c.source for c in cells).encode()).hexdigest()


# ------------------------------------------------------------------------------------ proxies

def _wrap(submission, value):
    if isinstance(value, wire.Handle):
        return RemoteObject(submission, value.number, value.type_name, value.parameters, value.module)
    if isinstance(value, list):
        return [_wrap(submission, v) for v in value]
    if isinstance(value, tuple):
        return tuple(_wrap(submission, v) for v in value)
    if isinstance(value, dict):
        return {k: _wrap(submission, v) for k, v in value.items()}
    return value


def _unwrap(value):
    if isinstance(value, RemoteObject):
        return wire.Handle(value._number, value._type_name)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    return value


def _same(before, after) -> bool:
    torch = loaded_torch()       # no tensor exists where torch was never imported
    if torch is not None and isinstance(before, torch.Tensor):
        before = before.numpy()
        after = after.numpy() if isinstance(after, torch.Tensor) else after
    if isinstance(before, np.ndarray):
        return (isinstance(after, np.ndarray) and after.shape == before.shape
                and np.array_equal(after, before, equal_nan=True))
    return True


READ_ONLY_WRITE = ("is read-only", "cannot set WRITEABLE flag")


def _call(submission, target, label, args, kwargs):
    # NumPy arguments reach the student's function read-only: a function that writes into them
    # raises there, and that is input-modified. In the sandbox every array and tensor argument
    # lives in memory the grader owns and reads back itself after the call (isolate/watch.py),
    # so a write that gets past the flag, or into a tensor (torch has no read-only tensors), is
    # seen whatever the student's process reports; reply["args"] is the grader's own reading.
    try:
        reply = submission.request("call", target=target, args=_unwrap(list(args)),
                                   kwargs=_unwrap(dict(kwargs)), return_args=True)
    except StudentError as err:
        if err.type == "ValueError" and any(m in err.message for m in READ_ONLY_WRITE):
            raise Mismatch((N_("{label} changed its input in place: it writes into an argument it was given ({reason})")
                            .format(label=label, reason=f"{err.type}: {err.message}") + f"\n{err.traceback}").rstrip(),
                           mistake="input-modified") from None
        raise
    changed = [f"argument {i + 1}" for i, (a, b) in enumerate(zip(args, reply["args"])) if not _same(a, b)]
    changed += [f"argument {k}=" for k in kwargs if not _same(kwargs[k], reply["kwargs"].get(k))]
    if changed:
        found = Mismatch((N_("{label} changed its input in place ({arguments} differs after the call)") if len(changed) == 1
                          else N_("{label} changed its input in place ({arguments} differ after the call)")).format(
            label=label, arguments=", ".join(changed)), mistake="input-modified")
        pending = getattr(submission, "pending", None)
        if pending is None:
            raise found
        # the answer is judged as well, so a second mistake in it is named too (issue 32); the
        # plugin fails the check with input-modified whatever the rest of it finds
        if not any(p.line == found.line for p in pending):
            pending.append(found)
    return _wrap(submission, reply["result"])


class Student:
    """Attribute access gives the student's functions and classes, by name."""

    def __init__(self, submission):
        self._submission = submission

    def __getattr__(self, name: str) -> "StudentFunction":
        if name.startswith("_"):
            raise AttributeError(name)
        return StudentFunction(self._submission, name)

    def _assign(self, **values) -> None:
        """Bind names in the student's notebook namespace (hidden inputs in place of a setup cell's)."""
        self._submission.request("assign", values=values)

    def _substituted(self, target: str, tables: dict, answerer=None, report: dict | None = None):
        """A context in which the student's `target` calls, in place of each of their functions named in
        `tables`, a stand-in (run/substitute.py): with `answerer`, one that asks it about every call
        (answerer(question) -> {"value": the reference's answer} or {}); else one that answers from
        its table (Answers). The grader's answers as data, never the reference's code. Entering it
        gives whether every stand-in is in place; on leaving, `report` gets per name what its stand-in
        did ({"answered", "misses", "asked"}: run/substitute.py, op_restore)."""
        import contextlib

        @contextlib.contextmanager
        def scope():
            submission = self._submission
            stand_ins = [dict(target=["name", target], name=name, table=table, ask=answerer is not None)
                         for name, table in tables.items()]
            submission.answerer = answerer
            try:
                yield submission.substitute(stand_ins)
            finally:
                submission.answerer = None
                back = submission.unsubstitute()
                if report is not None and isinstance(back, dict):
                    report.update(back)
        return scope()

    def _note(self, sentence: str) -> None:
        """A sentence the check's line carries whether it passes or fails (a substitution, said once)."""
        notes = getattr(self._submission, "notes", None)
        if notes is not None and sentence not in notes:
            notes.append(sentence)

    def _fingerprint(self) -> str:
        """A digest of the submission's code (of no code for a notebook's own kernel); a lesson that
        cannot be graded answers with its reason (ExerciseUnavailable)."""
        return self._submission.source_digest()


# every graded class is an nn.Module (COURSE_SPEC); graded functions have lower-case names
MODULE_CLASSES = frozenset(name for lesson in COURSE.values() for name in lesson.exercises if name[:1].isupper())


def _type_name(value) -> str:
    if isinstance(value, RemoteObject):
        return value._type_name
    if isinstance(value, wire.Opaque):
        return value.type_name
    torch = loaded_torch()
    if isinstance(value, np.ndarray) or (torch is not None and isinstance(value, torch.Tensor)):
        return "NumPy array" if isinstance(value, np.ndarray) else "tensor"
    return type(value).__name__


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


class StudentFunction:
    def __init__(self, submission, name: str):
        self._submission, self._name = submission, name

    def __call__(self, *args, **kwargs):
        try:
            value = _call(self._submission, ["name", self._name], self._name, args, kwargs)
        except StudentError as err:
            if err.type == "NameError" and f"'{self._name}'" in err.message:
                why = self._submission.why_missing(self._name)
                raise ExerciseUnavailable(why or f"{self._name} is not defined in your notebook") from None
            raise
        if self._name in MODULE_CLASSES and not (isinstance(value, RemoteObject) and value._module):
            # the checks would call module methods on it: the student's mistake, said as one
            raise Mismatch(f"{self._name}(...) returned {_a(_type_name(value))}, not an nn.Module: define it as "
                           f"`class {self._name}(nn.Module)`, call super().__init__() first in __init__, and "
                           "let the constructor return the new instance", mistake="wrong-type")
        return value

    def signature(self) -> str | None:
        return self._submission.request("signature", target=["name", self._name])

    def isolated(self, *args, timeout: float = 5.0) -> dict:
        """Call in a process of its own that shares nothing with the notebook's run or with another
        such call (Submission.fresh_call: a fresh sandboxed child that runs only the student's
        definitions). In a notebook's own kernel (the self-check) it is a plain call."""
        try:
            fresh = getattr(self._submission, "fresh_call", None)
            if fresh is not None:
                verdict = fresh(["name", self._name], _unwrap(list(args)), timeout)
                error = verdict.get("error") or {}
                if error.get("type") == "NameError" and f"'{self._name}'" in str(error.get("message")):
                    raise StudentError(error)
                return verdict
            return self._submission.request("isolated_call", target=["name", self._name],
                                            args=_unwrap(list(args)), seconds=timeout)
        except StudentError as err:
            if err.type == "NameError" and f"'{self._name}'" in err.message:
                why = self._submission.why_missing(self._name)
                raise ExerciseUnavailable(why or f"{self._name} is not defined in your notebook") from None
            raise


    def within_memory(self, *args, memory_bytes: int, timeout: float = 10.0) -> dict:
        """One call under a memory limit. In the sandbox: in a process of its own whose address space
        the kernel limits to what it maps just before the call plus `memory_bytes`
        (Submission.limited_call): {"result", "peak", "enforced": True}, or {"refused": NumPy's or
        the kernel's message, "enforced": True} when an allocation was refused. In a notebook's own
        kernel (the self-check) nothing can limit the student's process: a plain call whose peak
        tracemalloc measures, {"result", "peak", "enforced": False}. "peak" is tracemalloc's figure
        (bytes) from the student's process: it may describe a failure, never decide a pass."""
        limited = getattr(self._submission, "limited_call", None)
        try:
            if limited is None:
                reply = self._submission.request("traced_call", target=["name", self._name], args=_unwrap(list(args)),
                                                 trace=getattr(self._submission, "measure_peak", True))
                return {"result": _wrap(self._submission, reply["result"]), "peak": reply.get("peak"), "enforced": False}
            try:
                reply = limited(["name", self._name], _unwrap(list(args)), memory_bytes, timeout)
            except SubmissionFault as fault:
                if fault.kind != "memory":
                    raise
                return {"refused": str(fault), "enforced": True}
            return {"result": _wrap(self._submission, reply["result"]), "peak": reply.get("peak"), "enforced": True}
        except StudentError as err:
            if err.type == "NameError" and f"'{self._name}'" in err.message:
                why = self._submission.why_missing(self._name)
                raise ExerciseUnavailable(why or f"{self._name} is not defined in your notebook") from None
            if limited is not None and err.type in ("MemoryError", "_ArrayMemoryError"):   # NumPy's own kind
                return {"refused": f"{err.type}: {err.message}", "enforced": True}
            raise


class RemoteObject:
    """A student's object (usually an nn.Module) living in the worker."""

    def __init__(self, submission, number: int, type_name: str, parameters: dict | None = None,
                 module: bool = False):
        self._submission, self._number, self._type_name = submission, number, type_name
        self._module = module     # the student's process said it is an nn.Module
        # (requests sent when they were read, {name: shape}): the answer to `parameters` until the
        # student's process is asked anything else (a module is built, then its parameters checked
        # twice and loaded: one request, not three)
        self._shapes = (getattr(submission, "sent", None), parameters) if parameters is not None else None

    def __repr__(self):
        return f"<student's {self._type_name}>"

    def __call__(self, *args, **kwargs):
        return _call(self._submission, ["handle", self._number, None], self._type_name, args, kwargs)

    def method(self, name: str):
        return lambda *a, **k: _call(self._submission, ["handle", self._number, name],
                                     f"{self._type_name}.{name}", a, k)

    def parameters(self) -> dict:
        sent = getattr(self._submission, "sent", None)
        if self._shapes is not None and sent is not None and self._shapes[0] == sent:
            return dict(self._shapes[1])
        shapes = self._submission.request("parameters", handle=self._number)
        if isinstance(shapes, dict):
            self._shapes = (getattr(self._submission, "sent", None), shapes)
            return dict(shapes)
        return shapes

    def load_parameters(self, values: dict, strict: bool = True, mode: bool | None = None):
        """Load `values`; with `mode`, then .train(mode), in the same request."""
        extra = {} if mode is None else {"mode": bool(mode)}
        self._submission.request("load_parameters", handle=self._number, values=values, strict=strict, **extra)

    def train(self, mode: bool = True):
        self._submission.request("train", handle=self._number, mode=mode)
        return self

    def eval(self):
        return self.train(False)

    def gradients(self, *args, weight=None, **kwargs) -> dict:
        return self._submission.request("gradients", handle=self._number, args=list(args),
                                        kwargs=kwargs, weight=weight)
