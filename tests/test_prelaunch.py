"""A class run starts its jobs' workers before the jobs exist (sandbox.prelaunch); a job adopts
one. The adopted worker must isolate exactly like one the job started, and a worker that never
says it is ready must be replaced, not trusted."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys

import pytest

from autograder.isolate import bwrap
from autograder.isolate.sandbox import Sandbox, _kill_group, prelaunch


@pytest.mark.slow
@pytest.mark.skipif(bwrap.find_bwrap() is None, reason="bubblewrap is not installed")
def test_an_adopted_worker_runs_children_and_goes_away():
    started = prelaunch(1024 ** 3)
    assert started is not None
    proc, control = started
    box = Sandbox(memory_bytes=1024 ** 3)
    box.adopt(proc.pid, control)
    try:
        if box._proc is None:     # this machine refuses namespaces: the job starts its own worker
            pytest.skip("bubblewrap could not create namespaces here")
        assert box.namespaces and box._proc.pid == proc.pid
        child = box.spawn()
        child.request("exec", 10.0, label="probe", source="x = 1 + 1")
        child.close()
        layers = box.describe()
        assert any("bubblewrap" in layer for layer in layers) and any("Landlock" in layer for layer in layers)
        assert os.geteuid() != 0 or any("separate user" in layer for layer in layers), layers
    finally:
        box.close()
        _kill_group(proc)       # the main process reaps it
    assert proc.poll() is not None


@pytest.mark.slow
def test_a_worker_that_never_says_ready_is_replaced():
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    theirs.close()                # its end of the socket is closed without a word
    box = Sandbox(memory_bytes=1024 ** 3)
    box.adopt(gone.pid, ours)
    assert box._proc is None
    try:
        box.check()               # the first spawn starts a worker of the job's own
        assert box._proc is not None and box._proc.pid != gone.pid
    finally:
        box.close()


def _anon_huge_kb(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return sum(int(line.split()[1]) for line in f if line.startswith("AnonHugePages:"))


@pytest.mark.slow
@pytest.mark.skipif(bwrap.find_bwrap() is None, reason="bubblewrap is not installed")
def test_a_class_runs_worker_on_huge_pages_still_confines_its_children():
    """A class run's workers back their preloaded memory with huge pages (worker.HUGE_PAGES), so
    each child's fork and exit cost less. The children must be confined exactly as before, and
    the worker's memory must really be on huge pages where the kernel offers them."""
    from autograder.isolate.worker import HUGE_PAGES
    started = prelaunch(1024 ** 3, ("torch", HUGE_PAGES))
    assert started is not None
    proc, control = started
    box = Sandbox(memory_bytes=1024 ** 3, extras=("torch",))
    box.adopt(proc.pid, control)
    try:
        if box._proc is None:
            pytest.skip("bubblewrap could not create namespaces here")
        child = box.spawn(("torch",))
        assert child.request("exec", 10.0, label="probe", source="import torch\ndef total(n): return float(torch.ones(n).sum())") is None
        assert child.request("call", 10.0, target=["name", "total"], args=[3]) == {"result": 3.0}
        child.close()
        assert any("Landlock" in layer for layer in box.describe()) and any("seccomp" in layer for layer in box.describe())
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            offered = "[never]" not in f.read()
        zygotes = [int(p) for p in open(f"/proc/{proc.pid}/task/{proc.pid}/children").read().split()]
        if offered and os.uname().release.split(".")[:2] >= ["6", "1"]:
            assert any(_anon_huge_kb(pid) > 0 for pid in zygotes), "the worker is not on huge pages"
        # glibc's malloc was asked for huge pages from the start (bwrap.sandbox_env)
        environ = open(f"/proc/{zygotes[0]}/environ", "rb").read().split(b"\0")
        assert b"GLIBC_TUNABLES=glibc.malloc.hugetlb=1" in environ
    finally:
        box.close()
        _kill_group(proc)
    assert proc.poll() is not None


def test_only_a_worker_asked_for_huge_pages_has_mallocs_ask_for_them():
    from autograder.isolate.worker import HUGE_PAGES
    assert bwrap.sandbox_env(("torch", HUGE_PAGES))["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    assert "GLIBC_TUNABLES" not in bwrap.sandbox_env(("torch",))
    assert "GLIBC_TUNABLES" not in bwrap.direct_command(3, extras=("torch",))[1]
    assert bwrap.direct_command(3, extras=(HUGE_PAGES,))[1]["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"


def test_the_fork_server_is_killed_at_the_end_not_asked_to_shut_down(tmp_path, monkeypatch):
    """A class run's fork server holds torch and the grader: asked to stop, it would run the
    interpreter's whole shutdown (~0.6 s at the end of every class run). It is killed, and reaped:
    its shutdown (here an atexit hook that leaves a file) never runs."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import forkserver
    from autograder.classroom.runner import _stop_helpers
    marker, loaded = tmp_path / "the fork server shut down", tmp_path / "the fork server loaded it"
    (tmp_path / "shutdown_leaves_a_file.py").write_text(
        f"import atexit\nopen({str(loaded)!r}, 'w').close()\n"
        f"atexit.register(lambda: open({str(marker)!r}, 'w').close())\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    context = multiprocessing.get_context("forkserver")
    _stop_helpers()   # a fork server another test started would not have the preload
    context.set_forkserver_preload(["shutdown_leaves_a_file"])
    try:
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            assert pool.submit(os.getpid).result() != os.getpid()
        server = forkserver._forkserver._forkserver_pid
        assert server
        _stop_helpers()
    finally:
        context.set_forkserver_preload([])
    assert loaded.exists() and not marker.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(server, 0)   # reaped, not a zombie


@pytest.mark.skipif(bwrap.find_bwrap() is None or os.geteuid() != 0, reason="a shared worker is for root only")
def test_jobs_sharing_a_worker_keep_their_children_apart():
    """As root, a class run's jobs share one preloaded worker (prelaunch_shared). The children of
    two jobs then run at the same time in the same namespaces; each job's children have their own
    tmpfs (/tmp/job-<random>, capped on its own), uids no other live child holds, and only the job that
    started a child can end it. A job that gives the worker up leaves the other job's children be."""
    from autograder.isolate.sandbox import prelaunch_shared
    memory = 64 * 1024 ** 2      # also each job's tmpfs: small enough to fill here
    started = prelaunch_shared(memory, (), 2)
    assert started is not None
    proc, controls = started
    boxes = [Sandbox(memory_bytes=memory) for _ in controls]
    try:
        for box, control in zip(boxes, controls):
            box.adopt(proc.pid, control, shared=True)
        if boxes[0]._proc is None:
            pytest.skip("bubblewrap could not create namespaces here")
        probe = ("import os\n"
                 "def where():\n    return [os.getcwd(), os.getuid()]\n"
                 "def fill():\n"
                 "    n = 0\n"
                 "    try:\n"
                 "        while n < 1000:\n"
                 "            with open(f'f{n}', 'wb') as f:\n"
                 "                f.write(bytes(1 << 20))\n"
                 "            n += 1\n"
                 "    except OSError as exc:\n"
                 "        return [n, exc.errno]\n"
                 "    return [n, 0]\n")
        children = [box.spawn() for box in boxes]
        for child in children:
            child.request("exec", 10.0, label="probe", source=probe)
        places = [child.request("call", 10.0, target=["name", "where"])["result"] for child in children]
        roots = [box._shared_scratch for box in boxes]
        assert roots[0] != roots[1] and all(re.fullmatch(r"/tmp/job-[0-9a-f]{16}", r) for r in roots)
        assert places[0][0].startswith(roots[0] + "/") and places[1][0].startswith(roots[1] + "/")
        assert places[0][1] != places[1][1] and 0 not in (places[0][1], places[1][1])
        assert any("its jobs share them" in layer for layer in boxes[0].describe())
        # the other job's folder cannot be found: /tmp cannot be listed (its name is random)
        children[0].request("exec", 10.0, label="look", source=(
            "def look():\n    try:\n        return os.listdir('/tmp')\n    except OSError as exc:\n"
            "        return exc.errno\n"))
        assert children[0].request("call", 10.0, target=["name", "look"])["result"] == 13   # EACCES
        # job 0 fills its tmpfs; job 1's is untouched
        written, errno_ = children[0].request("call", 30.0, target=["name", "fill"])["result"]
        assert errno_ == 28 and written <= 64                                    # ENOSPC, at its own cap
        assert children[1].request("exec", 10.0, label="w", source="open('x', 'wb').write(bytes(1 << 20))") is None
        # job 0 cannot end job 1's child
        assert boxes[0]._ask({"op": "end", "pid": children[1].pid}) == {"ended": False, "error": "another job's child"}
        assert children[1].request("call", 10.0, target=["name", "where"])["result"] == places[1]
        # job 0 gives the worker up: its child is ended, job 1 goes on
        boxes[0].close()
        import time
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:   # the worker ends it once it reads the hang-up
            try:
                children[0].request("call", 5.0, target=["name", "where"])
            except Exception:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the child of the job that gave the worker up is still running")
        assert children[1].request("call", 10.0, target=["name", "where"])["result"] == places[1]
        again = boxes[1].spawn()
        assert again.request("exec", 10.0, label="again", source="x = 1") is None
        again.close()
        children[1].close()
    finally:
        for box in boxes:
            box.close()
        _kill_group(proc)
    assert proc.poll() is not None


def test_a_child_making_many_objects_runs_no_full_collection():
    """The worker collects once after its preload, with the collector off while it loads. A child
    then starts with nothing pending for the oldest generation: making 30,000 objects does not
    make it run a full collection, which would walk (and so copy, page by page) the ~250,000
    objects it shares with the worker. Collecting while loading left a child one such collection
    away: ~120 ms more for a child that makes 20,000 dicts (spawn, run, end: 27-31 ms against
    152-179 ms)."""
    from autograder.isolate.sandbox import Sandbox
    box = Sandbox(memory_bytes=2 * 1024 ** 3, extras=("torch",))
    try:
        child = box.spawn(("torch",))
        try:
            child.request("exec", 30, label="objects", source=(
                "import gc\n"
                "before = gc.get_stats()[2]['collections']\n"
                "made = [dict(a=i, b=[i]) for i in range(30000)]\n"
                "def full_collections():\n"
                "    return gc.get_stats()[2]['collections'] - before\n"))
            assert child.request("call", 30, target=["name", "full_collections"])["result"] == 0
        finally:
            child.close()
    finally:
        box.close()
