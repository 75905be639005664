"""Isolate: the layers a sandbox lacks, each said with why and how to fix it (`grade`'s first
line and `doctor` print these after the layers in force)."""
from __future__ import annotations

import os


def missing(layers: list[str], namespaces: bool, why_no_namespaces: str | None, own_uid: bool) -> list[str]:
    """One `MISSING ...` line per layer not in force."""
    out = []
    if not namespaces:
        why = why_no_namespaces or "the sandbox was started without bubblewrap"
        out.append(f"MISSING namespaces: {why}. Student code sees this machine's processes and files "
                   "other than those Landlock denies, and its scratch folder is on this machine's disk. "
                   "Fix: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                   "or kernel.apparmor_restrict_unprivileged_userns=0), or in Docker run with "
                   "--security-opt seccomp=unconfined --security-opt apparmor=unconfined; where that "
                   "is impossible (Gradescope) the other layers below are what protects")
    if os.geteuid() == 0 and own_uid and \
            not any(layer.startswith("separate user") for layer in layers):
        real = next((layer for layer in layers if layer.startswith("separate real uid")), None)
        out.append("MISSING separate user: " + (real or "children run as root, because the worker may not "
                                                "change uid here. Fix: give the grader CAP_SETUID and "
                                                "CAP_SETGID"))
    elif os.geteuid() != 0 and not namespaces:
        out.append("MISSING separate user: children run as your own user, so they could signal "
                   "your other processes where Landlock cannot scope signals (ABI < 6). Fix: grade "
                   "as root (each child gets a uid of its own), or where namespaces work")
    for layer in layers:
        if layer.startswith("NO "):
            out.append(f"MISSING {layer[3:]}. Fix: a Linux kernel 6.7+ with Landlock and seccomp "
                       "enabled (and `pip install -r requirements.txt` for landlockpy, pyseccomp)")
    return out
