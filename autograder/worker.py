"""The worker side of isolation: a preloaded parent that forks one child per submission.

`python -m autograder.worker FD` starts the parent ("zygote"). It imports NumPy, PyTorch and
matplotlib once, then waits on the control socket FD. Each request carries a fresh socket; the
parent forks a child that serves the grader's requests on it, in its own session (so the grader
can kill its whole process group), its own empty working directory, with a memory limit, with
output thrown away (a student's prints cannot pose as results), and a single thread. Where the
kernel allows a mount namespace, the child also sees the course, the Python installation and the
home folder read-only and solutions/ as an empty folder (protect_files).

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


CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = \
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18


def protect_files(read_only: list[str], hidden: list[str], workdir: str) -> None:
    """Give this process a private view of the filesystem in which student code cannot change
    the grader, its checks, the Python installation or the home folder (read-only bind mounts),
    cannot read the reference solutions (an empty read-only tmpfs on top of them), and can still
    write its own scratch folder. Needs a mount namespace: root, or unprivileged user namespaces.
    Raises OSError when the kernel refuses; the caller then goes on unprotected.
    """
    libc = ctypes.CDLL(None, use_errno=True)

    def call(result, what):
        if result != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    uid, gid = os.getuid(), os.getgid()
    if os.geteuid() == 0:
        call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    else:  # an unprivileged user may own a mount namespace inside a user namespace of its own
        call(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(CLONE_NEWUSER|CLONE_NEWNS)")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    for path in hidden:
        if os.path.isdir(path):
            call(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                            b"size=4k,mode=0555"), f"hide {path}")
    for path in dict.fromkeys(read_only):
        if not os.path.isdir(path) or path == "/":
            continue
        # remounting must keep the flags the kernel locked on the original mount (nosuid, ...)
        kept = os.statvfs(path).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
        call(libc.mount(path.encode(), path.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
        call(libc.mount(None, path.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | kept, None),
             f"make {path} read-only")
    kept = os.statvfs(workdir).f_flag & (MS_NOSUID | MS_NODEV | MS_NOEXEC)
    call(libc.mount(workdir.encode(), workdir.encode(), None, MS_BIND, None), "bind the scratch folder")
    call(libc.mount(None, workdir.encode(), None, MS_BIND | MS_REMOUNT | kept, None), "scratch folder writable")


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
        protected = False
        if settings.get("read_only") is not None:
            try:
                protect_files(settings["read_only"], settings.get("hidden", []), settings["workdir"])
                protected = True
            except OSError:
                pass  # no mount namespace here (e.g. a container without CAP_SYS_ADMIN)
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
        executor.protected = protected
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
