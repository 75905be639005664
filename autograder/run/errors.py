"""What can go wrong when the grader calls a student's code, as exceptions the checks can catch.

Raised by the sandbox (isolate/) and by the in-kernel self-check (run/student.py) alike, so a
check module imports them from here and never needs the sandbox.
"""
from __future__ import annotations

from autograder.run.bounds import MESSAGE, TRACEBACK, TYPE_NAME, clip


class SubmissionFault(Exception):
    """The student's process hung, died or ran out of memory (fatal for the exercise)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # "timeout" | "crash" | "memory"


class SandboxBroken(Exception):
    """The worker itself stopped answering (never the student's fault alone): regrade."""


class SandboxUnavailable(Exception):
    """No isolation layer works on this machine and unsandboxed grading was not allowed."""


class StudentError(Exception):
    """The student's code raised an exception (reported by type, message and traceback). The child
    says what they are, so each is cut to a bounded length here (run/bounds.py)."""

    def __init__(self, error: dict):
        error = error if isinstance(error, dict) else {}
        self.type = clip(error.get("type", "Exception"), TYPE_NAME)
        self.message = clip(error.get("message", ""), MESSAGE)
        self.traceback = clip(error.get("traceback", ""), TRACEBACK)
        super().__init__(f"{self.type}: {self.message}")

    def describe(self) -> str:
        text = f"{self.type}: {self.message}" if self.message else self.type
        if self.traceback:
            text += "\n" + self.traceback
        return text
