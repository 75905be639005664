"""Isolate: the process table, read from /proc: who is whose child, and signalling a whole tree.

Used inside the sandbox by the worker (worker.py: ending a child and everything it started) and
outside by the grader (launch.py: ending a worker). Runs in the sandbox, so it imports nothing
but the standard library.
"""
from __future__ import annotations

import os


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


def _signal_all(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
