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

from . import wire
from .compare import Mismatch
from .executor import Executor
from .notebook import Program
from .sandbox import DEFAULT_TIME_LIMIT, Sandbox, StudentError, SubmissionFault


class ExerciseUnavailable(Exception):
    """The exercise cannot be graded (its cell is missing, failed to run, or it hung earlier)."""

    def __init__(self, message: str, kind: str = "missing"):
        super().__init__(message)
        self.kind = kind


class Budget:
    """Seconds left for one whole student: every cell run and every request spends from it, so a
    submission that uses its full time on each exercise still cannot hold up the class for long."""

    def __init__(self, seconds: float):
        self.left = seconds

    def spend(self, seconds: float) -> None:
        self.left -= seconds


class Submission:
    def __init__(self, program: Program, sandbox: Sandbox, time_limit: float = DEFAULT_TIME_LIMIT,
                 budget: Budget | None = None):
        self.program = program
        self.sandbox = sandbox
        self.time_limit = time_limit
        self.budget = budget or Budget(float("inf"))
        self.child = None
        self.cell_errors: dict[str, str] = {}    # cell label -> why it failed to run
        self.skip_cells: set[str] = set()         # cells that hung or crashed the worker
        self.faults: dict[str, SubmissionFault] = {}  # exercise -> the fault that ended it
        self.exercise: str | None = None
        self._remaining: dict[str, float] = {}
        self.executed = 0                         # cells of the program run in the current child
        self.target = len(program.cells)          # cells to run before the current exercise

    # -- lifecycle ---------------------------------------------------------------------
    # The notebook runs top to bottom, and each exercise is graded on the state its self-check
    # cell would see (program.checkpoints): what passes the self-check in a fresh kernel passes
    # here. Cells run lazily up to the checkpoint of the exercise being graded.
    def _run_until(self, target: int):
        while True:
            if self.child is None or not self.child.alive or self.executed > target:
                if self.child is not None:
                    self.child.close()
                self.child = self.sandbox.spawn()
                self.executed = 0
            restart = False
            for index in range(self.executed, target):
                cell = self.program.cells[index]
                self.executed = index + 1
                if cell.label in self.skip_cells:
                    continue
                started = time.monotonic()
                try:
                    self.child.request("exec", self._allowance(self.time_limit), label=cell.label,
                                       source=cell.source)
                except StudentError as err:
                    self.cell_errors[cell.label] = err.describe()
                except SubmissionFault as fault:
                    what = {"timeout": f"did not finish within {self.time_limit:g} s and was skipped",
                            "memory": "ran out of memory and was skipped",
                            "crash": "stopped the worker process (sys.exit, os._exit or a crash) "
                                     "and was skipped"}[fault.kind]
                    self.cell_errors[cell.label] = f"running the cell {what}"
                    self.skip_cells.add(cell.label)
                    self.child.close()
                    restart = True   # run everything again without that cell, as if it were cut
                    break
                finally:
                    self.budget.spend(time.monotonic() - started)
            if not restart:
                return

    def _allowance(self, seconds: float) -> float:
        if self.budget.left <= 0:
            raise SubmissionFault("timeout", "the time budget for this whole submission ran out")
        return min(seconds, self.budget.left)

    def close(self):
        if self.child is not None:
            self.child.close()
            self.child = None

    # -- requests ----------------------------------------------------------------------
    def begin_exercise(self, exercise: str):
        self.exercise = exercise
        self._remaining.setdefault(exercise, self.time_limit)
        self.target = self.program.checkpoints.get(exercise, len(self.program.cells))

    def request(self, op: str, **args):
        exercise = self.exercise
        if exercise in self.faults:
            raise self.faults[exercise]
        if self.child is None or not self.child.alive or self.executed != self.target:
            self._run_until(self.target)
        budget = self._remaining.get(exercise, self.time_limit)
        started = time.monotonic()
        try:
            return self.child.request(op, self._allowance(budget), **args)
        except SubmissionFault as fault:
            self.faults[exercise] = fault
            self.child.close()
            self.child = None
            raise
        finally:
            spent = time.monotonic() - started
            self.budget.spend(spent)
            if exercise is not None:
                self._remaining[exercise] = budget - spent

    def why_missing(self, name: str) -> str | None:
        if name in self.program.problems:
            return self.program.problems[name]
        if name in self.cell_errors:
            return f"the cell '{name}' failed to run:\n{self.cell_errors[name]}"
        return None


class LocalSubmission:
    """The student's objects in this very process (the notebook's self-check)."""

    def __init__(self, namespace: dict):
        self.executor = Executor(namespace, fork_isolated=False)
        self.program = None
        self.cell_errors: dict[str, str] = {}
        self.faults: dict = {}
        self.exercise = None

    def begin_exercise(self, exercise: str):
        self.exercise = exercise

    def request(self, op: str, **args):
        frame = self.executor.handle(wire.encode({"op": op, "args": args}))
        reply = wire.decode(frame, objects=lambda n, t: wire.Handle(n, t))
        if reply["ok"]:
            return reply.get("value")
        raise StudentError(reply["error"])

    def why_missing(self, name: str) -> str | None:
        return None

    def close(self):
        pass


# ------------------------------------------------------------------------------------ proxies

def _wrap(submission, value):
    if isinstance(value, wire.Handle):
        return RemoteObject(submission, value.number, value.type_name)
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
    import torch
    if isinstance(before, torch.Tensor):
        before = before.numpy()
        after = after.numpy() if isinstance(after, torch.Tensor) else after
    if isinstance(before, np.ndarray):
        return (isinstance(after, np.ndarray) and after.shape == before.shape
                and np.array_equal(after, before, equal_nan=True))
    return True


def _call(submission, target, label, args, kwargs):
    # The in-place check is advisory: it compares our arguments with the copies the student's
    # process sends back after the call, and that process could send back anything. It can only
    # ever cost the student points (input-modified), never earn them.
    reply = submission.request("call", target=target, args=_unwrap(list(args)),
                               kwargs=_unwrap(dict(kwargs)), return_args=True)
    changed = [f"argument {i + 1}" for i, (a, b) in enumerate(zip(args, reply["args"])) if not _same(a, b)]
    changed += [f"argument {k}=" for k in kwargs if not _same(kwargs[k], reply["kwargs"].get(k))]
    if changed:
        raise Mismatch(f"{label} changed its input in place ({', '.join(changed)} {'differs' if len(changed) == 1 else 'differ'} after the call)",
                       mistake="input-modified")
    return _wrap(submission, reply["result"])


class Student:
    """Attribute access gives the student's functions and classes, by name."""

    def __init__(self, submission):
        self._submission = submission

    def __getattr__(self, name: str) -> "StudentFunction":
        if name.startswith("_"):
            raise AttributeError(name)
        return StudentFunction(self._submission, name)

    def _fingerprint(self) -> str:
        """A digest of the submission's code (empty for a notebook's own kernel)."""
        import hashlib
        program = getattr(self._submission, "program", None)
        cells = program.cells if program is not None else []
        return hashlib.sha256("\n".join(c.source for c in cells).encode()).hexdigest()


class StudentFunction:
    def __init__(self, submission, name: str):
        self._submission, self._name = submission, name

    def __call__(self, *args, **kwargs):
        try:
            return _call(self._submission, ["name", self._name], self._name, args, kwargs)
        except StudentError as err:
            if err.type == "NameError" and f"'{self._name}'" in err.message:
                why = self._submission.why_missing(self._name)
                raise ExerciseUnavailable(why or f"{self._name} is not defined in your notebook") from None
            raise

    def signature(self) -> str | None:
        return self._submission.request("signature", target=["name", self._name])

    def isolated(self, *args, timeout: float = 5.0) -> dict:
        """Call in a fresh process forked from the notebook's state (see Executor.op_isolated_call)."""
        try:
            return self._submission.request("isolated_call", target=["name", self._name],
                                            args=_unwrap(list(args)), seconds=timeout)
        except StudentError as err:
            if err.type == "NameError" and f"'{self._name}'" in err.message:
                why = self._submission.why_missing(self._name)
                raise ExerciseUnavailable(why or f"{self._name} is not defined in your notebook") from None
            raise


class RemoteObject:
    """A student's object (usually an nn.Module) living in the worker."""

    def __init__(self, submission, number: int, type_name: str):
        self._submission, self._number, self._type_name = submission, number, type_name

    def __repr__(self):
        return f"<student's {self._type_name}>"

    def __call__(self, *args, **kwargs):
        return _call(self._submission, ["handle", self._number, None], self._type_name, args, kwargs)

    def method(self, name: str):
        return lambda *a, **k: _call(self._submission, ["handle", self._number, name],
                                     f"{self._type_name}.{name}", a, k)

    def parameters(self) -> dict:
        return self._submission.request("parameters", handle=self._number)

    def load_parameters(self, values: dict, strict: bool = True):
        self._submission.request("load_parameters", handle=self._number, values=values, strict=strict)

    def train(self, mode: bool = True):
        self._submission.request("train", handle=self._number, mode=mode)
        return self

    def eval(self):
        return self.train(False)

    def gradients(self, *args, weight=None, **kwargs) -> dict:
        return self._submission.request("gradients", handle=self._number, args=list(args),
                                        kwargs=kwargs, weight=weight)
