"""A Dask worker that grades: its sandbox, set up once, and the task that grades one student.

`GraderPlugin` (a Dask WorkerPlugin the client registers) sets the worker up as one `--jobs` job
is set up (runner._job_init: the sandbox's preloaded worker in bubblewrap, the grader's
references and check modules), checks the sandbox's layers, and closes it at teardown. Only a
node that passes gets the SANDBOX resource every grading task asks for, so the scheduler never
sends a student to a node that cannot grade as asked. `grade` grades one student from the
notebooks' bytes (no shared filesystem) and hands the results back as data.

Imported by the cluster's processes only (it imports distributed).
"""
from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

from distributed import WorkerPlugin, get_worker
from distributed.core import Status

SANDBOX = "autograder-sandbox"     # the resource of a node that passed its checks
PLUGIN = "autograder"

_report: dict = {}                 # this worker's: what its sandbox holds, or why it cannot grade


def course_identity(lessons) -> str:
    """What decides a grade of `lessons` besides the submission: the check modules, their reference
    solutions and the course secret (hashed: the secret itself never leaves the grader). A node
    whose course differs from the client's would grade differently, silently: it is refused."""
    from autograder.course import CHECKS, COURSE
    from autograder.grading.plugin import course_secret
    h = hashlib.sha256()
    for path in sorted(CHECKS.glob("test_*.py")) + [COURSE[lesson].solution_path for lesson in sorted(lessons)]:
        h.update(path.name.encode())
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"missing")
    secret = course_secret()
    h.update(hashlib.sha256(secret).digest() if secret else b"no secret")
    return h.hexdigest()


class GraderPlugin(WorkerPlugin):
    """One sandbox per Dask worker, started when the plugin is registered (or the worker joins)."""

    name = PLUGIN

    def __init__(self, memory_bytes: int, lessons, identity: str, *, allow_missing: bool = False,
                 allow_unsandboxed: bool = False, mode: str = "auto", huge_pages: bool = False):
        self.memory_bytes = memory_bytes
        self.lessons = list(lessons)
        self.identity = identity
        self.allow_missing = allow_missing          # grade on a node that lacks a layer (named in the summary)
        self.allow_unsandboxed = allow_unsandboxed
        self.mode = mode                            # Sandbox's: "auto", or "direct" (no bubblewrap)
        self.huge_pages = huge_pages                # many students per node: as grade_many decides it

    async def setup(self, worker):
        import asyncio
        # Started from the thread that runs the tasks (one, --nthreads 1): bubblewrap's
        # --die-with-parent follows the thread that started it, and the tasks restart the sandbox
        # from that thread too.
        executor = worker.executors["default"]
        report = await asyncio.wrap_future(executor.submit(self._start, worker.state.nthreads))
        _report.clear()
        _report.update(report, node=worker.address, host=worker.ip)
        # set either way: a node started with --resources autograder-sandbox=1 is refused all the same
        await worker.set_resources(**{SANDBOX: 1 if report["refused"] is None else 0})
        if report["refused"] is None and worker.status == Status.running:
            # The scheduler looks again at students no node could take (a dead node's, while its
            # replacement starts) when a worker joins or resumes, not when its resources change
            # (distributed 2025.1): without this they would wait forever.
            worker.status = Status.paused
            worker.status = Status.running

    def _start(self, nthreads: int) -> dict:
        os.environ["OMP_NUM_THREADS"] = "1"      # as the command line sets it: the grader's tensors are tiny
        from autograder.classroom import runner
        report = {"layers": [], "missing": [], "refused": None}
        if nthreads != 1:
            report["refused"] = f"it runs {nthreads} threads per worker; start it with --nthreads 1"
            return report
        if course_identity(self.lessons) != self.identity:
            report["refused"] = ("its course differs from the client's (check modules, solutions/ or the course "
                                 "secret): give it the same commit and secret")
            return report
        runner._job_init(self.memory_bytes, self.allow_unsandboxed, lessons=self.lessons, mode=self.mode,
                         huge_pages=self.huge_pages)
        if runner._init_error is not None:
            report["refused"] = f"its sandbox cannot start: {runner._init_error}"
            return report
        report["layers"] = runner._sandbox.describe()
        report["missing"] = runner._sandbox.missing()
        if report["missing"] and not self.allow_missing:
            report["refused"] = "its sandbox lacks a layer: " + "; ".join(report["missing"])
        return report

    def teardown(self, worker):
        from autograder.classroom import runner
        _report.clear()          # a task that still comes is refused (see grade)
        if runner._sandbox is not None:
            runner._sandbox.close()


def node_report() -> dict:
    """Run on each worker by the client (Client.run)."""
    return dict(_report)


def grade(student: str, files: dict, time_limit: float) -> dict:
    """Grade one student on this worker; `files`: {lesson_id: the notebook as sent (see parcel)}."""
    from autograder.classroom import runner
    if _report.get("refused") or not _report:
        raise RuntimeError(f"this node may not grade: {_report.get('refused') or 'it has no sandbox set up'}")
    with tempfile.TemporaryDirectory(prefix="student-") as tmp:
        paths = {lesson: str(unpack(Path(tmp), lesson, sent)) for lesson, sent in files.items()}
        _, result, layers = runner._grade_one(student, paths, time_limit)
    return {"student": student, "result": result, "layers": layers, "node": get_worker().address}


# -- a notebook as bytes, and what cannot be sent as bytes --------------------------------------
# A file the client may not read (a link, a FIFO, one too large) is sent as what it is and made
# again on the node, so the node's grader says of it exactly what a local run says.

def parcel(path: Path):
    """The notebook at `path` as sent to a node: its bytes, or ("link" | "special" | "large" |
    "unreadable", detail) for a file that cannot be read as a notebook."""
    import errno
    from autograder.load.reading import MAX_NOTEBOOK_BYTES, read_regular_file
    try:
        info = os.lstat(path)
    except OSError as exc:
        return ("unreadable", exc.errno or 0)
    if stat.S_ISLNK(info.st_mode):
        return ("link", "")
    if not stat.S_ISREG(info.st_mode):
        return ("special", "")
    if info.st_size > MAX_NOTEBOOK_BYTES:
        return ("large", info.st_size)
    try:
        return read_regular_file(path)
    except OSError as exc:
        return ("unreadable", exc.errno or errno.EIO)


def unpack(folder: Path, lesson: str, sent) -> Path:
    path = folder / f"{lesson}.ipynb"
    if isinstance(sent, bytes):
        path.write_bytes(sent)
        return path
    kind, detail = sent
    if kind == "link":
        path.symlink_to(os.devnull)
    elif kind == "special":
        os.mkfifo(path)
    elif kind == "large":
        with open(path, "wb") as f:
            f.truncate(int(detail))          # sparse: no disk used
    else:
        path = folder / f"unreadable-{int(detail)}" / path.name   # a missing file: "could not be read"
    return path
