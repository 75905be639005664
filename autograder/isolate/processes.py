"""Isolate: the process table, read from /proc: who is whose child, and signalling a whole tree.

Used inside the sandbox by the worker (worker.py: ending a child and everything it started, and
acting as a child's uid, lowering a child's memory limit) and outside by the grader (launch.py: ending a worker). Runs in the sandbox, so it imports nothing
but the standard library.
"""
from __future__ import annotations

import os
import signal
import time


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, uid) of a process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        return ppid, os.stat(f"/proc/{pid}").st_uid
    except (OSError, ValueError, IndexError):
        return None


def _processes() -> dict[int, tuple[int, int]]:
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None:
                found[int(entry)] = info
    return found


def _tree(root: int, table: dict[int, tuple[int, int]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
        todo.extend(children.get(pid, []))
    return found


PF_EXITING = 0x4                      # /proc/<pid>/stat's flags: the task has begun to exit
SIGKILL_PENDING = 1 << (signal.SIGKILL - 1)


def _cannot_run_again(pid: int) -> bool:
    """True when no thread of `pid` can ever run code of its own again, so none can fork: each is
    gone, a zombie, exiting (PF_EXITING), or has SIGKILL pending. Such a process may still take
    seconds to disappear (the kernel tearing down a large address space on a busy machine), and
    waiting for it is safe however long it takes."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in threads:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if fields[0] in ("Z", "X") or int(fields[6]) & PF_EXITING:
                continue
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                pending = dict(line.split(":", 1) for line in f if line.startswith(("SigPnd:", "ShdPnd:")))
            if not (int(pending["SigPnd"], 16) | int(pending["ShdPnd"], 16)) & SIGKILL_PENDING:
                return False
        except FileNotFoundError:
            continue   # that thread is gone
        except (OSError, ValueError, IndexError, KeyError):
            return False   # unreadable: treat it as able to run, so it is signalled again
    return True


def _signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _can_change_user() -> bool:
    """Root with CAP_SETUID: children get their own uid (else they share ours)."""
    if os.geteuid() != 0:
        return False
    try:
        with open("/proc/self/status") as f:
            eff = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff"))
        return bool(eff & (1 << 7)) and bool(eff & (1 << 6))   # CAP_SETUID, CAP_SETGID
    except (OSError, StopIteration, ValueError):
        return False


def _as_user(uid: int, action) -> None:
    """Run `action` in a short-lived process of `uid`: kill(-1) there reaches exactly that uid's
    processes, and its files can be removed whatever their modes."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            action()
        finally:
            os._exit(0)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.001)
    os.kill(pid, signal.SIGKILL)


def _kill_as_users(uids) -> None:
    """kill(-1) as each of `uids`: every process of that uid at once, forks included (the kernel
    signals them all under one lock, and a fork that has not finished by then fails)."""
    for uid in uids:
        _as_user(uid, lambda: os.kill(-1, signal.SIGKILL))


def _lower_limit(pid: int, value: int, uid: int | None, data: int | None = None) -> None:
    """prlimit(pid, RLIMIT_AS) to (value, value), and RLIMIT_DATA to (data, data) if given, never above
    the hard limits it has. Reading or lowering another process's limit takes its uids (the worker has
    no CAP_SYS_RESOURCE in bubblewrap): a child with a uid of its own is limited from a short-lived
    process of that uid, as _as_user does."""
    import resource

    def lower():
        for which, to in ((resource.RLIMIT_AS, value), (resource.RLIMIT_DATA, data)):
            if to is None:
                continue
            _soft, hard = resource.prlimit(pid, which)
            lowest = to if hard == resource.RLIM_INFINITY else min(to, hard)
            resource.prlimit(pid, which, (lowest, lowest))
    if uid is None:
        lower()
        return
    done, said = os.pipe()       # the worker reaps its children itself: the helper's word, not its status
    if os.fork() == 0:
        try:
            os.close(done)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            lower()
            os.write(said, b"1")
        finally:
            os._exit(0)
    os.close(said)
    try:
        ok = os.read(done, 1) == b"1"     # b"" once the helper is gone without a word
    finally:
        os.close(done)
    if not ok:
        raise PermissionError(f"the limit of child {pid} could not be lowered as uid {uid}")


def mapped_bytes(pid: int, field: str = "VmSize") -> int:
    """What process `pid` maps (VmSize), or of it what is private and writable (VmData), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))


def lower_memory_limit(pid: int, extra_bytes: int, uid: int | None, at_most: int | None = None,
                       data_at_most: int | None = None) -> dict:
    """Limit process `pid`'s address space to what it maps now plus `extra_bytes`, or to `at_most` if
    that is lower (uid: its own uid, or None where it shares the worker's): {"limited", "mapped"} in
    bytes. With `data_at_most`, its private writable memory (RLIMIT_DATA: the heap and anonymous maps,
    never a library's code) likewise, to what it has now plus `extra_bytes` or `data_at_most`: unmapping
    libraries gives address space back, never data."""
    mapped = mapped_bytes(pid)
    limit = mapped + extra_bytes if at_most is None else min(mapped + extra_bytes, at_most)
    data = None if data_at_most is None else min(mapped_bytes(pid, "VmData") + extra_bytes, data_at_most)
    _lower_limit(pid, limit, uid, data)
    return {"limited": limit, "mapped": mapped}
