"""Run: the preloaded worker ("zygote") that forks one confined child per submission.

It starts inside the sandbox (isolation/bwrap.py), imports NumPy and matplotlib once, and
PyTorch and IPython only when a lesson to grade uses them (EXTRAS: a NumPy lesson never pays for
torch), then answers the grader on its control socket:

  {"op": "spawn", ...} + a socket fd  -> forks a child that confines itself (isolation/confine.py),
                                         reports {"layers"} (or {"error"}) as its first frame on that
                                         socket, and then serves the grader's requests on it;
                                         replies {"pid"} at once
  {"op": "end", "pid": N}             -> stops and kills that child and everything it started,
                                         replies {"ended": true} at once; removes its scratch
                                         folder once all of it is seen gone (Zygote.sweep)
  {"op": "load", "extras": [...]}     -> imports (and warms up) more of EXTRAS, for the children
                                         forked after it; replies {"loaded": [...], "seconds"}
  {"op": "limit", "pid": N, "memory_bytes": M, "at_most": A, "data_at_most": D}
                                      -> lowers that child's address-space limit to what it maps now
                                         plus M, or A if lower, and its data limit likewise, or D
                                         (Zygote.limit_memory); replies {"limited", "mapped"}
  {"op": "mapped", "pid": N}          -> {"mapped": what that child maps now, "data": of it, what is
                                         private and writable (VmData), in bytes}

The worker never runs student code; the children do. It is a subreaper (and, in a pid
namespace, pid 1), so every process a child starts stays in its tree and can be found and killed.
Where children get a uid of their own, "everything it started" is simply every process of that
uid, which no process can leave.
"""
from __future__ import annotations

import gc
import json
import os
import shutil
import signal
import socket
import sys
import time

from autograder.isolate.preload import EXTRAS, _preload, load_extras  # noqa: F401 - EXTRAS: sandbox, runner
from autograder.isolate.processes import (_as_user, _can_change_user, _cannot_run_again, _kill_as_users,
                                          _processes, _signal_all, _tree, lower_memory_limit,
                                          mapped_bytes)

PR_SET_CHILD_SUBREAPER = 36
SWEEP_EVERY = 0.001      # seconds between passes while an ended child is not yet gone
SWEEP_AT_MOST = 0.05     # ... growing to this while all that is left can never run again
MAX_CHASES = 500         # passes in a row that each find a process new or able to run (a chain of
                         # forks outrunning the scan; a killed torch-sized process takes ~3 ms to go)


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


class Zygote:
    """Forks the children of one job, or of several (a class run's jobs share one worker as root:
    one preload, not one per job). Each job has a control socket of its own; a child belongs to
    the socket that asked for it, and only that socket can end it. When a socket hangs up, its
    children are ended; when the last one does, the worker stops."""

    def __init__(self, controls: list[socket.socket]):
        self.controls = list(controls)
        self.children: dict[int, dict] = {}     # pid -> {"uid", "scratch", "owner", ...}
        self.dying: dict[int, dict] = {}        # ended, not yet seen gone: the same
        self.uid_mode = _can_change_user()
        self.chases = 0                         # passes in a row that found a process able to run
        self.killed: set[int] = set()           # processes signalled since a pass last found none
        self.pause = SWEEP_EVERY                # until the next pass while a child is dying

    # -- spawning ------------------------------------------------------------------------
    def spawn(self, request: dict, conn_fd: int, owner: int = 0) -> dict:
        # Neither a child's uid nor its scratch folder's name counts the children started before
        # it (a lesson-06 subject could otherwise tell how many subjects ran before it): both drawn
        # at random, the uid among those no live child holds
        import secrets
        uid = None
        if self.uid_mode and request.get("uid_base") is not None:
            base = int(request["uid_base"])
            taken = {info["uid_taken"] for info in [*self.children.values(), *self.dying.values()]}
            uid = base + secrets.choice([n for n in range(1000) if base + n not in taken])
        scratch = os.path.join(request["scratch_root"], f"s-{secrets.token_hex(8)}")
        settings = dict(request, uid=uid, scratch=scratch)
        pid = os.fork()
        if pid == 0:
            for control in self.controls:
                control.close()
            serve_child(conn_fd, settings)
        os.close(conn_fd)
        # a uid that is only the child's real uid (files_as_root) does not identify its processes
        # in /proc: those are found by the process tree, as where uids are shared
        self.children[pid] = {"uid": None if request.get("files_as_root") else uid, "scratch": scratch,
                              "uid_taken": uid, "owner": owner}
        # The child reports its layers (or why it could not confine itself) to the grader, as the
        # first frame on its socket: the worker answers at once and is free for the other job
        return {"pid": pid}

    # -- ending --------------------------------------------------------------------------
    def end(self, pid: int, owner: int = 0) -> dict:
        """Stop and kill the child and everything it started, and answer at once: the kernel takes a
        few milliseconds to take a torch-sized process apart, and the grader (or, in a shared worker,
        the other job) need not wait for it. Until the child and all it started are seen gone
        (`sweep`), its uid stays taken, so no new child can get it; then its scratch is removed."""
        info = self.children.get(pid)
        if info is None:
            return {"ended": True, "note": "unknown child"}
        if info["owner"] != owner:
            return {"ended": False, "error": "another job's child"}
        del self.children[pid]
        self.dying[pid] = info
        self.pause = SWEEP_EVERY
        if info["uid"] is not None:
            # kill(-1) as the child's uid (a block of the grader's own, launch._uid_base) reaches all
            # of it at once, forks included: a process that keeps changing its pid can outrun the
            # passes over /proc, the host's (no PID namespace) and, now and then, our own too
            _kill_as_users([info["uid"]])
        self.sweep()
        return {"ended": True}

    def mapped(self, pid: int, owner: int = 0) -> dict:
        """What a live child maps now (Submission.limited_call: before any code of the student's runs)."""
        info = self.children.get(pid)
        if info is None or info["owner"] != owner:
            return {"error": "not a live child of this job"}
        return {"mapped": mapped_bytes(pid), "data": mapped_bytes(pid, "VmData")}

    def limit_memory(self, pid: int, extra_bytes: int, owner: int = 0, at_most: int | None = None,
                     data_at_most: int | None = None) -> dict:
        """Lower a live child's address-space limit (RLIMIT_AS), soft and hard, to what it maps now plus
        `extra_bytes` (Submission.limited_call: after the student's definitions ran, before the one
        call it limits). Set from here, not by the child, so no code of the student's can skip it,
        and without a capability the child cannot raise it again."""
        info = self.children.get(pid)
        if info is None or info["owner"] != owner:
            return {"error": "not a live child of this job"}
        return lower_memory_limit(pid, extra_bytes, info["uid"], at_most, data_at_most)

    def sweep(self) -> None:
        """One pass over the process table: every process of a dying child's tree or uid, and every
        stray (re-parented to the worker, not a live child's), is stopped (a stopped process cannot
        fork) and killed. After a pass that finds none, the dying children are done: their scratch
        folders are removed, their uids free (until then no new child can get them).

        A killed process can take seconds to go (a large address space in small pages, forked a
        hundred times, on a busy machine): it can never run again (_cannot_run_again), so it is only
        waited for, however long, with passes further apart. A chain of forks that outruns the scans
        (each pass finds a process new or still able to run) is ended by kill(-1) as each dying uid, or
        where children have none, after MAX_CHASES such passes by the worker ending itself (in
        bubblewrap its PID namespace goes with all of it); the grader then regrades what it was
        serving (Sandbox.end: SandboxBroken), never blaming a student."""
        me = os.getpid()
        table = _processes()
        live_roots = set(self.children)
        dying_uids = {info["uid"] for info in self.dying.values() if info["uid"] is not None}
        doomed: set[int] = set()
        for pid in self.dying:
            if pid in table:
                doomed.update(_tree(pid, table))
        for other, (ppid, uid) in table.items():
            # strays: processes the kernel re-parented to us that are not a live child's tree
            if ppid == me and other not in live_roots:
                doomed.update(_tree(other, table))
            elif uid in dying_uids:
                doomed.add(other)
        doomed.discard(me)
        if doomed:
            # a pass that still finds one keeps every dying child dying (and its uid taken): a child
            # is done only after a pass that finds nothing at all. A process not seen before may
            # have forked after the scan and exited on its own (hopping pids): only those already
            # killed here and unable to run again are merely waited for
            able = [pid for pid in doomed if pid not in self.killed or not _cannot_run_again(pid)]
            self.killed.update(able)
            if not able:   # only the kernel's teardown is left: wait for it, checking less often
                self.chases, self.pause = 0, min(self.pause * 2, SWEEP_AT_MOST)
                return
            _signal_all(able, signal.SIGSTOP)   # stopped, a process can no longer fork
            _signal_all(able, signal.SIGKILL)
            self.chases, self.pause = self.chases + 1, SWEEP_EVERY
            uids = {info["uid_taken"] for info in self.dying.values()} if self.uid_mode else {None}
            if self.chases % 50 == 0 and None not in uids:
                _kill_as_users(uids)   # every process of those uids at once, forks included
            elif self.chases >= MAX_CHASES and None in uids:
                os._exit(5)
            return
        for info in self.dying.values():
            shutil.rmtree(info["scratch"], ignore_errors=True)
            if os.path.exists(info["scratch"]) and info["uid"] is not None:
                _as_user(info["uid"], lambda: shutil.rmtree(info["scratch"], ignore_errors=True))
        self.dying.clear()
        self.chases = 0
        self.killed.clear()

    def serve(self) -> None:
        import select
        while self.controls or self.dying:
            # while a child is dying, look again between requests (Zygote.pause)
            ready, _, _ = select.select(self.controls, [], [], self.pause if self.dying else None)
            for control in ready:
                self._answer(control)
            if self.dying:
                self.sweep()

    def _answer(self, control: socket.socket) -> None:
        owner = control.fileno()
        try:
            msg, fds, _flags, _addr = socket.recv_fds(control, 65536, 1)
        except OSError:
            msg, fds = b"", []
        if not msg:
            self._hang_up(control)
            return
        try:
            request = json.loads(msg)
            if request.get("op") == "spawn" and fds:
                reply = self.spawn(request, fds[0], owner)
            elif request.get("op") == "end":
                reply = self.end(int(request["pid"]), owner)
            elif request.get("op") == "limit":
                at_most, data = request.get("at_most"), request.get("data_at_most")
                reply = self.limit_memory(int(request["pid"]), int(request["memory_bytes"]), owner,
                                          None if at_most is None else int(at_most),
                                          None if data is None else int(data))
            elif request.get("op") == "mapped":
                reply = self.mapped(int(request["pid"]), owner)
            elif request.get("op") == "load":
                started = time.monotonic()
                reply = {"loaded": load_extras(request.get("extras") or ()),
                         "seconds": time.monotonic() - started}
            else:
                reply = {"error": f"unknown request {request.get('op')!r}"}
        except Exception as exc:  # never die on one bad request
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            control.sendall(json.dumps(reply).encode())
        except OSError:
            self._hang_up(control)

    def _hang_up(self, control: socket.socket) -> None:
        """A job is done (or gave this worker up): its children are ended, its socket closed."""
        owner = control.fileno()
        for pid in [p for p, info in self.children.items() if info["owner"] == owner]:
            self.end(pid, owner)
        self.controls.remove(control)
        control.close()


# ------------------------------------------------------------------------------------ the child

def serve_child(conn_fd: int, settings: dict) -> None:
    """Body of a forked child: confine, report on its socket, then serve requests. Never returns."""
    code = 0
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        os.closerange(3, conn_fd)   # nothing of the worker's stays open
        os.closerange(conn_fd + 1, 1 << 16)
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):   # a student's prints can never pose as results
            os.dup2(devnull, fd)
        os.close(devnull)
        sys.stdout = open(os.devnull, "w")
        sys.stderr = open(os.devnull, "w")
        from autograder.isolate.confine import confine
        from autograder.run import frames, wire
        sock = socket.socket(fileno=conn_fd)
        try:
            layers = confine(settings, _vm_bytes())
            report = {"layers": layers}
        except Exception as exc:
            report = {"error": f"could not confine the worker: {type(exc).__name__}: {exc}"}
        # written before any student code runs: the grader reads it before its first request
        frames.send(sock, wire.encode(report))
        if "error" in report:
            os._exit(4)
        from autograder.run.executor import Executor
        executor = Executor()
        executor.layers = layers

        def ask(question):
            """One question to the grader in the middle of a request (a stand-in's, run/substitute.py):
            its reply is data."""
            frames.send(sock, wire.encode({"ask": question}, bounded=True))
            return wire.decode(frames.recv(sock))
        executor.ask = ask
        while True:
            fds: list[int] = []
            try:
                frame = frames.recv(sock, fds=fds)
            except (EOFError, OSError, wire.WireError):
                break
            frames.send(sock, executor.handle(frame, fds))
    except BaseException:
        code = 3
    finally:
        os._exit(code)


HUGE_PAGES = "huge_pages"   # an `extras` flag, not a module: back the preloaded memory with huge pages


def use_user_site(path: str | None) -> None:
    """The grader's user site (`pip install --user`; the worker runs with -s, HOME=/tmp), with its
    .pth files, where Python puts it: before the installation's own, so NumPy is the grader's."""
    import site
    if path and path not in sys.path and os.path.isdir(path):
        before = list(sys.path)
        site.addsitedir(path)   # appends it, and what its .pth files add
        first = next((i for i, p in enumerate(before) if p in site.getsitepackages()), len(before))
        sys.path[:] = before[:first] + [p for p in sys.path if p not in before] + before[first:]


def zygote(control_fds, extras=(), user_site: str | None = None, scratch_roots=None) -> None:
    """The worker: load everything once, then fork children for the job on each control socket
    (`control_fds`: one fd, or one per job of a class run, each with a tmpfs of its own: `scratch_roots`)."""
    use_user_site(user_site)
    started = time.monotonic()
    # Importing torch and the rest makes ~250k objects. The collector ran over them again and again
    # while they were made (~0.3 s of a class run's start, where the worker is the last to be
    # ready), and left a child one full collection away: a child that made 20,000 objects walked,
    # and so copied page by page, everything it shares with the worker (~120 ms). One collection
    # at the end leaves every preloaded object in the oldest generation with nothing pending.
    gc.disable()
    try:
        loaded = _preload(extras)
    finally:
        gc.enable()
    gc.collect()
    if HUGE_PAGES in extras:
        from autograder.isolate.confine import huge_pages
        huge_pages()
    seconds = time.monotonic() - started
    try:
        import ctypes
        ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except OSError:
        pass
    fds = [control_fds] if isinstance(control_fds, int) else list(control_fds)
    controls = [socket.socket(fileno=fd) for fd in fds]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    for k, control in enumerate(controls):
        control.sendall(json.dumps({"ready": True, "pid": os.getpid(), "uid_mode": _can_change_user(),
                                    "loaded": loaded, "seconds": seconds,
                                    "scratch_root": scratch_roots[k] if scratch_roots else None}).encode())
    Zygote(controls).serve()


if __name__ == "__main__":
    zygote(int(sys.argv[1]))
