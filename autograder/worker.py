"""The worker side of isolation: a preloaded parent that forks one child per submission.

`python -m autograder.worker FD` starts the parent ("zygote"). It imports NumPy, PyTorch and
matplotlib once, then waits on the control socket FD. Each request carries a fresh socket; the
parent forks a child that serves the grader's requests on it, in its own session (so the grader
can kill its whole process group), its own empty working directory, with a memory limit, with
output thrown away (a student's prints cannot pose as results), and a single thread.

The child is what runs student code; the parent never does.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import socket
import sys

PR_SET_CHILD_SUBREAPER = 36


def _vm_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _preload():
    os.environ.setdefault("MPLBACKEND", "Agg")
    import numpy  # noqa: F401
    import torch
    torch.set_num_threads(1)
    import torch.nn.functional  # noqa: F401
    import matplotlib.pyplot  # noqa: F401 - lesson setup cells import it for their figures
    from autograder import executor  # noqa: F401


def serve_child(conn_fd: int, settings: dict) -> None:
    """Body of a forked child. Never returns."""
    code = 0
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        try:  # orphans of the student's processes re-parent to us, so the grader finds them
            ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except Exception:
            pass
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdout = open(os.devnull, "w")
        sys.stderr = open(os.devnull, "w")
        os.chdir(settings["workdir"])
        memory = settings.get("memory_bytes")
        if memory:
            limit = _vm_bytes() + int(memory)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        from autograder.executor import Executor
        from autograder import wire
        executor = Executor()
        sock = socket.socket(fileno=conn_fd)
        while True:
            try:
                frame = wire.recv(sock)
            except (EOFError, OSError, wire.WireError):
                break
            wire.send(sock, executor.handle(frame))
    except BaseException:
        code = 3
    finally:
        os._exit(code)


def zygote(control_fd: int) -> None:
    _preload()
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    control.sendall(b'{"ready": true}')
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(control, 65536, 1)
        except OSError:
            return
        if not msg:
            return
        settings = json.loads(msg)
        if not fds:
            continue
        pid = os.fork()
        if pid == 0:
            control.close()
            serve_child(fds[0], settings)
        os.close(fds[0])
        control.sendall(json.dumps({"pid": pid}).encode())


if __name__ == "__main__":
    zygote(int(sys.argv[1]))
