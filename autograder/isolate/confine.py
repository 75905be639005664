"""Confine: what a freshly forked worker child does to itself before it runs any student code.

Runs inside the sandbox (see bwrap.py), in the child the preloaded worker just forked, in this
order, each step one kernel mechanism that the step after cannot undo:

  1. its own session, and a subreaper, so everything it starts stays in its process tree;
  2. a user of its own (setresuid to an unused uid) where the worker may change uid: the child
     can then neither signal nor read the processes of the worker or of another student;
     where it may not, every capability is dropped instead;
  3. resource limits: address space, processes, file size, open files, no core dumps;
  4. Landlock: read-only access to the Python installation and system libraries, read-write to
     its own empty scratch folder, nothing else of the filesystem (no course, no class folder,
     no /proc, no home, no /tmp); no TCP; signals and abstract UNIX sockets scoped to its own
     domain, so it cannot signal or connect to anything outside it (ABI 6+). Landlock also
     stops ptrace of processes outside the domain. Enforcing it sets no_new_privs;
  5. seccomp: no mount, namespaces, ptrace, kernel keyring, BPF, io_uring or non-UNIX sockets.

`prepare()` (and, for a class run, `huge_pages()`) run once in the preloaded worker, before any
fork, so that each child only loads what is ready.

`confine()` returns the layers that are really in force, for the report. A layer the kernel
refuses is reported as missing, never silently assumed.

Landlock comes from `landlockpy` and seccomp from `pyseccomp` (libseccomp): both are thin,
maintained bindings to the kernel interfaces; only the uid change and the capability drop are
plain system calls.
"""
from __future__ import annotations

import ctypes
import errno
import os
import resource

PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
LAST_CAP = 63
# SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP(_LOCKED) | SECBIT_KEEP_CAPS_LOCKED
SECURE_BITS_LOCKED = 0x2f

READ_ONLY_SYSTEM = ["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", "/etc/localtime"]
DEVICES = {"/dev/null": "rw", "/dev/zero": "r", "/dev/full": "rw", "/dev/urandom": "r", "/dev/random": "r"}


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.restype = ctypes.c_int
    libc.syscall.restype = ctypes.c_long
    return libc


def _prctl(libc, option, arg=0) -> int:
    return libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_bounding_set(libc) -> None:
    """While still privileged: no capability can ever come back (not even through execve of a
    setuid-root or file-capability program), and root's special rules are locked off."""
    for cap in range(LAST_CAP + 1):
        _prctl(libc, PR_CAPBSET_DROP, cap)   # EINVAL past the kernel's last cap: ignored
    _prctl(libc, PR_SET_SECUREBITS, SECURE_BITS_LOCKED)


def drop_capabilities(libc) -> None:
    """Empty the effective, permitted and inheritable sets (a plain capset: libcap would add a
    C dependency for this one call)."""
    header = _CapHeader(0x20080522, 0)          # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if libc.syscall(126, ctypes.byref(header), data) != 0:   # capset
        raise OSError(ctypes.get_errno(), "capset")


def _capability_sets() -> dict[str, int]:
    with open("/proc/self/status") as f:
        return {k: int(v, 16) for k, v in (line.split(":", 1) for line in f if line.startswith("Cap"))}


def _has_capabilities() -> bool:
    return _capability_sets()["CapEff"] != 0


def _capabilities_empty() -> bool:
    sets = _capability_sets()
    return all(sets[k] == 0 for k in ("CapEff", "CapPrm", "CapInh", "CapAmb"))


def change_user(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)   # from root to another uid: the kernel clears every capability


def change_real_user(uid: int) -> None:
    """Only the real uid changes (the effective one stays 0, with no capability, so the child can
    still read a Python installation only root can reach): the kernel counts processes against
    the real uid, and never limits uid 0's, so this is what makes RLIMIT_NPROC hold. Going back
    to real uid 0 is a setresuid call, which seccomp refuses."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, 0, 0)


def set_limits(memory_bytes: int | None, vm_now: int) -> None:
    limits = {resource.RLIMIT_CORE: 0,
              resource.RLIMIT_FSIZE: 256 * 1024 ** 2,   # no file over 256 MiB in the scratch folder
              resource.RLIMIT_NOFILE: 256,
              resource.RLIMIT_NPROC: 512}              # per uid (and per user namespace): no fork bomb
    if memory_bytes:
        limits[resource.RLIMIT_AS] = vm_now + int(memory_bytes)
    for which, value in limits.items():
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (value, value))


def landlock(read_only: list[str], scratch: str, subject: bool = False) -> str:
    """Enforce the filesystem, network and scope rules; returns a description of the domain. A
    lesson-06 subject may only read its scratch folder: a file it made would move the file system's
    inode counter, which the next subject could read from a file of its own."""
    from landlockpy import AccessFS, AccessNet, Ruleset, Scope, abi_version
    abi = abi_version()
    read = AccessFS.READ_FILE | AccessFS.READ_DIR | AccessFS.EXECUTE
    read_file = AccessFS.READ_FILE | AccessFS.EXECUTE
    with Ruleset(scoped=Scope.SIGNAL | Scope.ABSTRACT_UNIX_SOCKET,
                 handled_net=AccessNet.BIND_TCP | AccessNet.CONNECT_TCP) as rules:
        everything = rules.handled_fs
        for path in dict.fromkeys(read_only):
            if os.path.exists(path):
                rules.allow_path(path, read if os.path.isdir(path) else read_file)
        for path, mode in DEVICES.items():
            if os.path.exists(path):
                rights = AccessFS.READ_FILE | (AccessFS.WRITE_FILE if "w" in mode else AccessFS.NONE)
                rules.allow_path(path, rights)
        rules.allow_path(scratch, read if subject else everything)
        rules.restrict()   # also sets no_new_privs
        scoped = rules.scoped
    parts = [f"Landlock ABI {abi}: files (read-only Python and system libraries, "
             f"{'read-only' if subject else 'read-write'} scratch)"]
    parts.append("network (no TCP)" if abi >= 4 else "no network rules (ABI < 4)")
    parts.append("signals scoped" if scoped & Scope.SIGNAL else "signals NOT scoped (ABI < 6)")
    return ", ".join(parts)


# Denied with EPERM whatever their arguments. The sandbox needs none of them; each is a known way
# to undo or see around the other layers (mounts, namespaces, tracing, kernel objects).
DENIED_SYSCALLS = [
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "ptrace", "process_vm_readv",
    "process_vm_writev", "process_madvise", "pidfd_getfd", "kcmp", "bpf", "perf_event_open",
    "userfaultfd", "keyctl", "add_key", "request_key", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "open_by_handle_at", "name_to_handle_at", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "swapon", "swapoff",
    "reboot", "acct", "quotactl", "settimeofday", "clock_settime", "adjtimex", "syslog",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups",
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
    # SysV IPC and memfd: memory that outlives the child or escapes RLIMIT_AS
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl", "memfd_create", "memfd_secret",
    # reaching other processes' scheduling (Landlock does not cover these)
    "setpriority", "sched_setaffinity", "sched_setscheduler", "sched_setparam", "sched_setattr",
    "ioprio_set",
    # a new session is a new scheduler autogroup: 100 of them starve a classmate's job
    "setsid",
    # the scratch root is shared with the worker where uids are shared: no changing modes
    "chmod", "fchmod", "fchmodat", "fchmodat2",
    # state other processes could see: POSIX message queues, watches on the shared read-only files,
    # and the page cache's residency (which files another process read)
    "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
    "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark",
    "mincore", "fadvise64", "readahead", "cachestat",
]
# A lesson-06 subject (Submission.fresh_call) starts no process or thread either: the only way to
# move the kernel's pid counter, which the next subject would read as its own pid
NO_NEW_TASKS = ["fork", "vfork", "clone"]
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x80)
AF_UNIX = 1


_PROGRAMS: dict[bool, bytes] = {}     # compiled once in the preloaded worker, loaded by each child


def prepare() -> None:
    """In the preloaded worker, before any fork: compile both seccomp filters, and let landlockpy
    find libc (ctypes.util.find_library runs ldconfig, ~2.5 ms), so that a child only loads what
    is ready (a child costs ~6 ms less; a student's course starts 19 of them)."""
    import landlockpy
    landlockpy.abi_version()
    for subject in (False, True):
        _PROGRAMS[subject] = _compile(_build_filter(subject))


def huge_pages() -> None:
    """Ask the kernel to back the worker's anonymous memory (~190 MB once torch is loaded) with
    2 MB pages (MADV_HUGEPAGE, then MADV_COLLAPSE, Linux 6.1+; refused quietly elsewhere). A
    fork then copies one page-table entry per 2 MB instead of 512, and a child's exit frees as
    few: each child costs ~6 ms less, for ~0.5 s once at start. A class run asks for it
    (worker.HUGE_PAGES); a single grade, ~20 children, does not. A child's writes still copy
    4 KB pages."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    MADV_HUGEPAGE, MADV_COLLAPSE, huge = 14, 25, 1 << 21
    with open("/proc/self/maps") as f:
        regions = [line.split() for line in f]
    for parts in regions:
        if len(parts) > 5 and parts[5] != "[heap]" or "w" not in parts[1]:
            continue   # only the heap and anonymous writable mappings
        start, end = (int(x, 16) for x in parts[0].split("-"))
        start, end = (start + huge - 1) & ~(huge - 1), end & ~(huge - 1)
        if end > start:
            libc.madvise(start, end - start, MADV_HUGEPAGE)
            libc.madvise(start, end - start, MADV_COLLAPSE)


def _build_filter(subject: bool):
    import pyseccomp as sc
    rules = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED_SYSCALLS + (NO_NEW_TASKS if subject else []):
        try:
            rules.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, RuntimeError, ValueError):
            pass   # a name this architecture does not have
    for bit in NAMESPACE_FLAGS if not subject else ():   # one rule per flag: seccomp cannot test "any bit of"
        rules.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, bit, bit))
    # clone3 passes its flags in memory seccomp cannot read: ENOSYS makes libc fall back to clone
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    # no new sockets at all (host UNIX sockets are reachable by path where there is no mount
    # namespace); the grader's socket was made before, and socketpair() stays allowed
    rules.add_rule(sc.ERRNO(errno.EAFNOSUPPORT), "socket")
    rules.add_rule(sc.ERRNO(errno.EPERM), "prlimit64", sc.Arg(0, sc.NE, 0))   # only its own limits
    rules.add_rule(sc.ERRNO(errno.EPERM), "ioctl", sc.Arg(1, sc.EQ, 0x5412))   # TIOCSTI
    return rules


def _compile(rules) -> bytes:
    """The BPF program libseccomp generates for `rules`: what its seccomp_load() would generate
    again in every child (~1 ms there, where each page the compiler touches is copied first)."""
    import tempfile
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _load_program(program: bytes) -> None:
    """What libseccomp's seccomp_load() does with its default attributes, given the program it
    generated: no_new_privs, then the filter for this thread (no flags)."""
    if not program or len(program) % 8:
        raise OSError(errno.EINVAL, "not a BPF program")
    libc = _libc()
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if _prctl(libc, PR_SET_NO_NEW_PRIVS, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog),
                  ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


def seccomp(subject: bool = False) -> str:
    program = _PROGRAMS.get(subject)
    if program is not None:
        _load_program(program)
    else:   # not prepared (prepare() failed in the worker): libseccomp compiles and loads it here
        _build_filter(subject).load()
    return ("seccomp (no mounts, namespaces, ptrace, keyring, BPF, io_uring, SysV IPC, message queues, file "
            "watches, sockets or new sessions" + ("; no new process or thread)" if subject else ")"))


def confine(settings: dict, vm_now: int) -> list[str]:
    """Apply every layer `settings` asks for; return the list of layers in force."""
    libc = _libc()
    layers = []
    os.setsid()
    _prctl(libc, PR_SET_CHILD_SUBREAPER, 1)
    uid = settings.get("uid")
    if _has_capabilities():
        drop_bounding_set(libc)
    if uid is not None and settings.get("files_as_root"):
        change_real_user(int(uid))
        layers.append(f"separate real uid {uid} only, for the process limit: the files it reads are read as "
                      f"root, because other users cannot read {settings['files_as_root']} "
                      f"(make its folders world-readable, e.g. chmod o+rx, for a user of its own)")
    elif uid is not None:
        change_user(int(uid))
        layers.append(f"separate user (uid {uid})")
    drop_capabilities(libc)
    if not _capabilities_empty():
        raise OSError(errno.EPERM, "could not drop every capability")
    layers.append("no capabilities")
    _prctl(libc, PR_SET_DUMPABLE, 0)   # no core dumps, and /proc/<pid> owned by root

    scratch = settings["scratch"]
    os.makedirs(scratch, mode=0o700, exist_ok=True)
    os.chmod(scratch, 0o700)
    os.chdir(scratch)
    set_limits(settings.get("memory_bytes"), vm_now)
    layers.append("resource limits (memory, processes, file size)")
    # Landlock and seccomp are each best effort: a kernel or container that refuses one is
    # reported (the grader refuses to run with neither namespaces nor Landlock), never hidden
    if settings.get("landlock", True):
        try:
            layers.append(landlock(settings["read_only"] + READ_ONLY_SYSTEM, scratch, bool(settings.get("subject"))))
        except Exception as exc:
            layers.append(f"NO Landlock ({type(exc).__name__}: {exc})")
    if settings.get("seccomp", True):
        try:
            layers.append(seccomp(bool(settings.get("subject"))))
        except Exception as exc:
            layers.append(f"NO seccomp ({type(exc).__name__}: {exc})")
    return layers
