"""`python -m autograder doctor`: which isolation layers protect grading here, shown by trying.

`quick_probe()` is what `grade` asks before it starts (no worker is started). `report()` starts
the real sandbox, then has a confined child try what a hostile submission would (read the
course, signal the worker, open a network socket, make a namespace) and prints each outcome.
"""
from __future__ import annotations

import os

from autograder.isolate import bwrap

ATTEMPTS = '''
import os, signal, socket
def _try(what, action):
    try:
        action()
        return (what, "ALLOWED")
    except Exception as exc:
        return (what, "blocked (" + type(exc).__name__ + ")")
def _course():
    return os.listdir(COURSE)
def _signal():
    os.kill(WORKER, 0)
def _net():
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).connect(("127.0.0.1", 9))
def _ns():
    import ctypes
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
def _proc():
    return os.listdir("/proc")
RESULTS = [_try("read the course folder", _course), _try("signal the worker", _signal),
           _try("open a network connection", _net), _try("create a user namespace", _ns),
           _try("list /proc", _proc)]
def results():
    return RESULTS
'''


def landlock_abi() -> int:
    try:
        from landlockpy import abi_version
        return int(abi_version())
    except Exception:
        return 0


namespaces_work = bwrap.namespaces_work


def quick_probe() -> dict:
    ok, why = namespaces_work()
    return {"namespaces": ok, "why": why, "landlock": landlock_abi(), "root": os.geteuid() == 0}


def report() -> tuple[bool, str]:
    from autograder.course import ROOT
    from autograder.isolate.sandbox import Sandbox, SandboxBroken, SandboxUnavailable, StudentError, SubmissionFault
    probe = quick_probe()
    lines = [f"running as {'root' if probe['root'] else 'uid ' + str(os.geteuid())}",
             f"bubblewrap namespaces: {'yes' if probe['namespaces'] else 'no (' + probe['why'] + ')'}",
             f"Landlock: {'ABI ' + str(probe['landlock']) if probe['landlock'] else 'not available'}"]
    box = Sandbox()
    try:
        child = box.spawn()
    except SandboxUnavailable as exc:
        box.close()
        return False, "\n".join(lines + [f"NO SANDBOX: {exc}"])
    try:
        worker = 1 if box.namespaces else box._proc.pid
        child.request("exec", 20, label="doctor",
                      source=f"COURSE = {str(ROOT)!r}\nWORKER = {worker}\n" + ATTEMPTS)
        attempts = child.request("call", 20, target=["name", "results"])["result"]
    except (StudentError, SubmissionFault, SandboxBroken) as exc:
        attempts = [("self-test", f"could not run: {exc}")]
    finally:
        child.close()
        box.close()
    lines.append("layers in force for student code:")
    lines += [f"  - {layer}" for layer in box.describe()]
    lines.append("what a confined child tried:")
    lines += [f"  - {what}: {outcome}" for what, outcome in attempts]
    held = all(outcome != "ALLOWED" for _, outcome in attempts)
    missing = box.missing()
    ok = held and not missing
    if ok:
        lines.append("OK: student code is isolated (every layer above is in force)")
    elif held:
        lines.append(f"PARTIAL: every attempt above was blocked, but {len(missing)} layer(s) are missing "
                     "(the MISSING lines above say why and how to fix it); student code is NOT fully isolated")
    else:
        lines.append("WARNING: some attempts were allowed; student code is NOT isolated")
    return ok, "\n".join(lines)
