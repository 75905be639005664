"""Isolate (grader side): a call's arguments as they are after the call, seen by the grader itself.

The in-place check compares the arguments the grader passed with the same arguments after the
call. Those must never come from the student's process: its code can patch anything there (the
executor, the wire format, gc), so whatever it reports is only a claim. A watched call (op
"call" with return_args) therefore sends its arrays and tensors in memory the grader owns: a
memfd, sealed so that it can neither shrink nor grow, passed with the request. The worker builds
the student's NumPy arrays (read-only views) and torch tensors (writable, as torch has no
read-only tensors) over that memory, so any write into an argument lands there, however it was
made; once the reply is in, the grader reads the memory back itself. The child's report is used
only where the grader sent no data: a class it asked the child to build (lesson 09's course
model) comes back as the handle of the object built from it, and nothing else.
"""
from __future__ import annotations

import fcntl
import os
import socket
import tempfile

from autograder.run import frames, wire

_BUILT_BY_THE_CHILD = object()


def _memory(parts: list[tuple[int, bytes]]) -> tuple[int, int]:
    """A sealed memfd holding `parts` at their offsets: (fd, size)."""
    size = max(offset + len(data) for offset, data in parts)
    region = bytearray(size)
    for offset, data in parts:
        region[offset:offset + len(data)] = data
    try:
        fd = os.memfd_create("autograder-arguments", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    except (AttributeError, OSError):   # no memfd here: an unlinked temporary file does the same
        fd, path = tempfile.mkstemp(prefix="autograder-arguments-")
        os.unlink(path)
    try:
        os.ftruncate(fd, size)
        written = 0
        while written < size:
            written += os.pwrite(fd, memoryview(region)[written:], written)
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        except OSError:
            pass    # a temporary file cannot be sealed: a short read counts as a change (Watch.after)
    except BaseException:
        os.close(fd)
        raise
    return fd, size


def _merge(mine, theirs, lost=frozenset()):
    """The grader's own view of the arguments after the call; the child's report only where the
    grader sent a class for the child to build (and then only a handle). Arrays whose memory was
    cut short (`lost`) are no longer what they were."""
    if mine is _BUILT_BY_THE_CHILD:
        return theirs if isinstance(theirs, wire.Handle) else None
    if id(mine) in lost:
        return wire.Opaque("argument", "its memory was cut short during the call")
    if isinstance(mine, (list, tuple)):
        if not (isinstance(theirs, (list, tuple)) and len(theirs) == len(mine)):
            theirs = [None] * len(mine)
        return type(mine)(_merge(a, b, lost) for a, b in zip(mine, theirs))
    if isinstance(mine, dict):
        theirs = theirs if isinstance(theirs, dict) else {}
        return {k: _merge(v, theirs.get(k), lost) for k, v in mine.items()}
    return mine


class Watch:
    """One request to a child; for a watched call, its arguments in memory the grader owns."""

    def __init__(self, op: str, args: dict):
        self.watched = op == "call" and bool(args.get("return_args"))
        parts: list | None = [] if self.watched else None
        self.frame = wire.encode({"op": op, "args": args}, shared=parts)
        self.fd, self.size = _memory(parts) if parts else (None, 0)

    def send(self, sock: socket.socket) -> None:
        if self.fd is None:
            frames.send(sock, self.frame)
            return
        socket.send_fds(sock, [self.frame[:8]], [self.fd])
        sock.sendall(self.frame[8:])

    def after(self, value):
        """The reply's value for a watched call: {"result": what the student returned, "args",
        "kwargs": the arguments as the grader reads them now}."""
        if not self.watched:
            return value
        data = os.pread(self.fd, self.size, 0) if self.fd is not None else b""
        seen: list = []
        mine = wire.decode(self.frame, objects=lambda n, t: wire.Handle(n, t), shared=data.ljust(self.size, b"\0"),
                           classes=lambda name, source: _BUILT_BY_THE_CHILD, seen=seen)["args"]
        lost = frozenset(map(id, seen)) if len(data) < self.size else frozenset()   # never for a sealed memfd
        reported = value if isinstance(value, dict) else {}
        return {"result": reported.get("result"),
                "args": _merge(list(mine.get("args", [])), reported.get("args"), lost),
                "kwargs": _merge(dict(mine.get("kwargs") or {}), reported.get("kwargs"), lost)}

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
