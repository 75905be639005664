"""The grader side of isolation: start, talk to, time and kill the student's worker process.

A `Sandbox` owns one preloaded worker parent (see worker.py) and asks it for a fresh child per
submission. Requests to the child carry a deadline; when it passes, or the child dies, the
child's whole process tree is killed and the caller gets a `SubmissionFault` with a reason a
student can act on.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import wire
from .course import ROOT, SOLUTIONS

DEFAULT_TIME_LIMIT = 10.0                 # seconds per exercise
DEFAULT_MEMORY_LIMIT = 2 * 1024 ** 3      # bytes on top of what the preloaded worker uses


class SubmissionFault(Exception):
    """The student's process hung, died or ran out of memory (fatal for the exercise)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # "timeout" | "crash" | "memory"


class StudentError(Exception):
    """The student's code raised an exception (reported by type, message and traceback)."""

    def __init__(self, error: dict):
        self.type = error.get("type", "Exception")
        self.message = error.get("message", "")
        self.traceback = error.get("traceback", "")
        super().__init__(f"{self.type}: {self.message}")

    def describe(self) -> str:
        text = f"{self.type}: {self.message}" if self.message else self.type
        if self.traceback:
            text += "\n" + self.traceback
        return text


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, []):
            found.append(child)
            todo.append(child)
    return found


def kill_tree(pid: int) -> None:
    """Stop, then kill, a process, its process group and every descendant."""
    tree = [pid] + _descendants(pid)
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        for p in tree:
            try:
                os.kill(p, sig)
            except OSError:
                pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


class Child:
    """One forked worker child: a socket, a pid and a scratch directory."""

    def __init__(self, pid: int, sock: socket.socket, workdir: str):
        self.pid, self.sock, self.workdir = pid, sock, workdir
        self.alive = True

    def request(self, op: str, timeout: float, **args):
        """Send one request; return the decoded reply value or raise."""
        if not self.alive:
            raise SubmissionFault("crash", "the worker process had already stopped")
        frame = wire.encode({"op": op, "args": args})
        deadline = time.monotonic() + max(timeout, 0.05)
        try:
            self.sock.settimeout(max(timeout, 0.05))
            wire.send(self.sock, frame)
            self.sock.settimeout(max(deadline - time.monotonic(), 0.05))
            reply_frame = wire.recv(self.sock)
        except socket.timeout:
            self.close()
            raise SubmissionFault("timeout", "did not finish within the time limit") from None
        except (EOFError, OSError, wire.WireError) as exc:
            self.close()
            raise SubmissionFault("crash", f"the worker process stopped ({exc})") from None
        try:
            reply = wire.decode(reply_frame, objects=lambda n, t: wire.Handle(n, t))
        except (wire.WireError, ValueError, TypeError) as exc:
            self.close()
            raise SubmissionFault("crash", f"the worker sent an unreadable answer ({exc})") from None
        if not isinstance(reply, dict) or "ok" not in reply:
            raise SubmissionFault("crash", "the worker sent an unreadable answer")
        if reply["ok"]:
            return reply.get("value")
        error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
        if error.get("type") == "MemoryError" or "can't allocate memory" in str(error.get("message", "")):
            raise SubmissionFault("memory", "ran out of memory (the limit was reached): "
                                            + str(error.get("message", ""))[:200])
        raise StudentError(error)

    def close(self) -> None:
        if self.alive:
            self.alive = False
            try:
                self.sock.close()
            except OSError:
                pass
        kill_tree(self.pid)
        shutil.rmtree(self.workdir, ignore_errors=True)


def protected_paths() -> list[str]:
    """Folders student code may read but never change: the course (the grader, its checks, the
    lessons), the Python installation with its packages, and the home folder (no planting code
    in ~/.bashrc or ~/.local for the next run)."""
    import site
    paths = [ROOT, sys.prefix, sys.base_prefix, sys.exec_prefix, Path.home()]
    paths += site.getsitepackages() + [site.getusersitepackages()]
    return [str(Path(p).resolve()) for p in paths if Path(p).is_dir()]


class Sandbox:
    """A preloaded worker parent, started on first use and shared by every submission."""

    def __init__(self, memory_bytes: int | None = DEFAULT_MEMORY_LIMIT, read_only: list[str] = ()):
        self.memory_bytes = memory_bytes
        self.read_only = [str(p) for p in read_only]   # more folders student code must not change
        self._proc = None
        self._control = None

    def _start(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "autograder.worker", str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, env=env)
        theirs.close()
        ours.settimeout(120)
        if not ours.recv(64):
            raise RuntimeError("the worker parent failed to start")
        self._control = ours

    def spawn(self) -> Child:
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        workdir = tempfile.mkdtemp(prefix="autograder-")
        ours, theirs = socket.socketpair()
        settings = {"workdir": workdir, "memory_bytes": self.memory_bytes,
                    "read_only": protected_paths() + self.read_only, "hidden": [str(SOLUTIONS)]}
        socket.send_fds(self._control, [json.dumps(settings).encode()], [theirs.fileno()])
        theirs.close()
        pid = json.loads(self._control.recv(4096))["pid"]
        return Child(pid, ours, workdir)

    def close(self) -> None:
        if self._proc is not None:
            try:
                self._control.close()
            except OSError:
                pass
            kill_tree(self._proc.pid)
            self._proc.wait()
            self._proc = None
