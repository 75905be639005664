"""Isolate (grader side): start worker processes, and end them with everything they started.

`sandbox.Sandbox` drives a worker; this module only starts one (in bubblewrap or directly),
lets a class run start its jobs' workers early (`prelaunch`), and kills process trees.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time

from autograder.isolate import bwrap
from autograder.run.errors import SandboxUnavailable

DEFAULT_MEMORY_LIMIT = 2 * 1024 ** 3      # bytes on top of what the preloaded worker uses


def _uid_base() -> int:
    """Children's uids: a block of 1000 from 1.8e9 up, picked by our pid, so parallel graders on
    one machine do not share uids, skipping any block where a real account lives (without a PID
    namespace, ending a child kills every process of its uid)."""
    import pwd
    accounts = {p.pw_uid for p in pwd.getpwall()}
    for step in range(4000):
        base = 1_800_000_000 + ((os.getpid() + step) % 4000) * 1000
        if not any(base <= uid < base + 1000 for uid in accounts):
            return base
    raise SandboxUnavailable("no free block of uids for the sandbox")


def _popen_worker(use_bwrap: bool, memory_bytes: int | None, stderr=subprocess.DEVNULL, extras=()):
    """Start a worker (in bubblewrap, or directly); returns (process, our end of its control socket).
    It says {"ready": true} on that socket once it has loaded everything."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fd = theirs.fileno()
    if use_bwrap:
        argv = bwrap.worker_command(bwrap.find_bwrap(), fd, as_root=os.geteuid() == 0,
                                    tmp_bytes=memory_bytes or DEFAULT_MEMORY_LIMIT, extras=extras)
        env = {}
    else:
        argv, env = bwrap.direct_command(fd, extras=extras)
    proc = subprocess.Popen(argv, pass_fds=[fd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=stderr, start_new_session=True, env=env)
    theirs.close()
    return proc, ours


def prelaunch_shared(memory_bytes: int | None, extras, jobs: int):
    """One bubblewrap worker for `jobs` jobs: (process, [one control socket per job]), or None.
    It loads torch once, not once per job (~1.5 s of processor time at a class run's start, when
    the fork server loads the grader on the same two cores). Only as root: each child then gets a
    uid of its own, so the children of two jobs, which run at the same time in the same
    namespaces, are apart as a job's own children are (see worker.Zygote)."""
    if bwrap.find_bwrap() is None or os.geteuid() != 0 or jobs < 2:
        return None
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET) for _ in range(jobs)]
    fds = [theirs.fileno() for _, theirs in pairs]
    try:
        argv = bwrap.worker_command(bwrap.find_bwrap(), fds, as_root=True,
                                    tmp_bytes=memory_bytes or DEFAULT_MEMORY_LIMIT, extras=extras)
        proc = subprocess.Popen(argv, pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, env={})
    except OSError:
        for ours, theirs in pairs:
            ours.close()
            theirs.close()
        return None
    for _, theirs in pairs:
        theirs.close()
    return proc, [ours for ours, _ in pairs]


def prelaunch(memory_bytes: int | None, extras=()):
    """A bubblewrap worker started now, for a job to adopt later (None where bubblewrap is
    missing). A class run starts one per job before its jobs exist, so that the workers load
    torch while the jobs' fork server loads the grader: otherwise one of the two cores idles."""
    if bwrap.find_bwrap() is None:
        return None
    try:
        return _popen_worker(True, memory_bytes, extras=extras)
    except OSError:
        return None


class _Adopted:
    """Popen's interface for a worker this process did not start. Only its parent can reap it
    (the class run's main process does, at the end), so its state is read from /proc, where an
    exited worker shows as a zombie until then."""

    def __init__(self, pid: int):
        self.pid, self.returncode = pid, None

    def poll(self):
        try:
            state = open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            state = "X"
        if state in ("Z", "X"):
            self.returncode = -signal.SIGKILL if self.returncode is None else self.returncode
        return self.returncode

    def wait(self, timeout=None):
        deadline = time.monotonic() + (1e9 if timeout is None else timeout)
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("worker", timeout)
            time.sleep(0.01)
        return self.returncode

    def kill(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass


def _kill_group(proc) -> None:
    """Kill the worker and every process under it: frozen first (a stopped process cannot fork),
    then killed, until none is left. Children live in sessions of their own, so a process group
    is not enough; in bubblewrap the PID namespace would take them anyway once its pid 1 dies."""
    from autograder.isolate.processes import _processes, _tree
    for _ in range(20):
        table = _processes()
        tree = _tree(proc.pid, table) if proc.pid in table else []
        if not tree:
            break
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for pid in tree:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        try:
            proc.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass
    try:
        proc.kill()
        proc.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        pass


def _remove_scratch(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)
    if os.path.exists(path):   # leftovers owned by a child uid we no longer run as: best effort
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
