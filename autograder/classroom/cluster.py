"""Grade a class on a Dask cluster: `grade CLASS --out OUT --cluster local:N | --scheduler ADDRESS`.

The client (this process) reads each student's notebooks, sends them as bytes to the cluster as
one task per student, writes that student's files as the results come back (runner.write_student,
the same files and fingerprints as `--jobs`), then releases them from the cluster. Each Dask
worker grades in a sandbox of its own, set up once by node.GraderPlugin; a node that cannot
grade as asked is refused and named. A worker that dies has its students regraded elsewhere
(Dask reschedules them, up to ALLOWED_FAILURES deaths per student); a student whose task fails
for good is listed as not graded, and the next run grades them, as it does every student
without a fingerprint (runner.pending). Dask is imported only here and in node.py.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path

from autograder.classroom import runner
from autograder.report.results import sandbox_line, terminal_safe
from autograder.run.errors import SandboxUnavailable

ALLOWED_FAILURES = 3     # worker deaths while grading one student before the student is given up
START_SECONDS = 300.0    # for the first worker of an existing cluster
STALL_SECONDS = 600.0    # no node able to grade for this long (all gone or refused): the rest is not graded
IN_FLIGHT_PER_WORKER = 2 # tasks sent ahead of the results: the class's bytes never all in memory, and
                         # few students on a worker that dies (each counts it as a failure)


def local_config() -> dict:
    """A LocalCluster's settings (an existing cluster's are its own: INSTRUCTORS.md says which to set)."""
    return {"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
            # Dask's own upkeep, made rare: it costs processor time and, in each worker, takes the GIL
            # from the thread that grades. The statistical profiler samples every thread 100 times
            # a second; each server checks its event loop 50 times a second and the system 2 times;
            # the scheduler looks for work to steal 10 times (a worker holds 2 students at most).
            "distributed.worker.profile.enabled": False,
            "distributed.admin.tick.interval": "1s",
            "distributed.admin.system-monitor.interval": "2s",
            "distributed.scheduler.work-stealing": False}


class ClusterError(Exception):
    """The cluster could not be reached or started: nothing was graded."""


def parse_cluster(spec: str) -> int:
    """`local:N` -> N worker processes on this machine."""
    kind, _, count = spec.partition(":")
    if kind != "local" or not count.isdigit() or int(count) < 1:
        raise ValueError(f"--cluster takes local:N (N worker processes on this machine), not {spec!r}")
    return int(count)


def grade_on_cluster(students: dict[str, dict[str, Path]], *, local_workers: int | None = None,
                     scheduler: str | None = None, time_limit: float = 10.0, memory_limit: float = 2.0,
                     out_dir: Path | None = None, show=print, progress: bool = False,
                     allow_unsandboxed: bool = False, allow_missing_layers: bool = False,
                     brief: bool = False, verbose: bool = False,
                     mode: str = "auto") -> tuple[dict[str, dict], dict[str, str]]:
    """Returns (results of the students graded, in class order; {student: why not graded})."""
    results, todo = runner.pending(students, out_dir)
    not_graded: dict[str, str] = {}
    if todo:
        lessons = sorted({lesson for notebooks in todo.values() for lesson in notebooks})
        from autograder.classroom.node import GraderPlugin, course_identity
        with connect(local_workers, scheduler) as client:
            workers = len(client.scheduler_info().get("workers", {}))
            plugin = GraderPlugin(int(memory_limit * 1024 ** 3), lessons, course_identity(lessons),
                                  allow_missing=allow_missing_layers, allow_unsandboxed=allow_unsandboxed, mode=mode,
                                  huge_pages=len(todo) >= 4 * max(1, workers))
            try:
                nodes = _start_nodes(client, plugin, show)
                graded_on = _grade(client, todo, students, time_limit, out_dir, results, not_graded, show,
                                   progress, verbose)
                _show_nodes(client, nodes, graded_on, show, verbose)
            finally:
                if scheduler is not None:   # the cluster stays up: its workers close their sandboxes now
                    _quietly(client.unregister_worker_plugin, plugin.name)
    ordered = {s: results[s] for s in students if s in results}
    if out_dir is not None:
        runner.write_class_files(out_dir, ordered, show)
    runner.show_grades(ordered, show, progress, brief, verbose)
    for student, why in not_graded.items():
        show(terminal_safe(f"NOT GRADED {student}: {why}; the next run with the same --out grades them"))
    return ordered, not_graded


class connect:
    """A client of a LocalCluster of `local_workers` processes (loopback only), or of `scheduler`."""

    def __init__(self, local_workers, scheduler):
        self.local_workers, self.scheduler = local_workers, scheduler
        self.cluster = self.client = None

    def __enter__(self):
        import dask
        from distributed import Client, LocalCluster
        try:
            if self.scheduler is not None:
                # TLS: the certificates come from Dask's configuration (distributed.comm.tls.*), and so
                # does how long to try to reach the scheduler (distributed.comm.timeouts.connect, 30 s)
                self.client = Client(self.scheduler)
                self.client.wait_for_workers(1, timeout=START_SECONDS)
                return self.client
            with dask.config.set(local_config()):
                self.cluster = LocalCluster(n_workers=self.local_workers, threads_per_worker=1, processes=True,
                                            host="127.0.0.1", dashboard_address=None,
                                            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                                            silence_logs=logging.CRITICAL)
                self.client = Client(self.cluster)
            return self.client
        except Exception as exc:
            self.__exit__(None, None, None)
            raise ClusterError(f"could not reach the cluster: {type(exc).__name__}: {exc}") from None

    def __exit__(self, *exc):
        for part in (self.client, self.cluster):
            if part is not None:
                _quietly(part.close)
        return False


def _quietly(call, *args):
    try:
        call(*args)
    except Exception:
        pass


def _start_nodes(client, plugin, show) -> dict[str, dict]:
    """Register the plugin (each node starts and checks its sandbox); {address: report}. Raises
    SandboxUnavailable, naming every node and why, when none may grade."""
    from autograder.classroom.node import node_report
    client.register_plugin(plugin, name=plugin.name)
    nodes = client.run(node_report)
    accepted = [addr for addr, report in nodes.items() if report.get("refused") is None and report]
    if not accepted:
        raise SandboxUnavailable("no node of the cluster may grade: " + "; ".join(
            f"{addr} ({report.get('host', '?')}): {report.get('refused') or 'its setup did not finish'}"
            for addr, report in sorted(nodes.items())))
    return nodes


def _grade(client, todo, students, time_limit, out_dir, results, not_graded, show, progress, verbose) -> dict:
    """Send the students, a few per worker ahead; write each as it comes back. {node: students graded}."""
    import itertools
    from distributed import as_completed
    from autograder.classroom.node import SANDBOX, grade, parcel
    graded_on: dict[str, int] = {}
    layers: list[str] = []
    queue = iter(todo.items())
    ahead = IN_FLIGHT_PER_WORKER * max(1, len(client.scheduler_info().get("workers", {})))
    sent: dict = {}

    def send(pending):
        for student, notebooks in pending:
            files = {lesson: parcel(Path(path)) for lesson, path in notebooks.items()}
            future = client.submit(grade, student, files, time_limit, key=f"grade-{len(sent)}-{student[:40]}",
                                   resources={SANDBOX: 1}, pure=False, retries=1)
            sent[future.key] = student
            yield future

    running = as_completed(list(send(itertools.islice(queue, ahead))))
    stalled: list[str] = []          # why the students still out were given up, once nobody could grade
    done = threading.Event()
    threading.Thread(target=_watch, args=(client, running, stalled, done), name="cluster-stall", daemon=True).start()
    try:
        for future in runner.progress_bar(running, progress, len(todo)):
            student = sent[future.key]
            if future.status == "cancelled" and stalled:
                not_graded[student] = stalled[0]
            else:
                _take(future, student, students, out_dir, results, not_graded, graded_on, layers, show, verbose)
            future.release()   # the cluster forgets it: the results are on disk
            for more in send(itertools.islice(queue, 0 if stalled else 1)):
                running.add(more)
    finally:
        done.set()
    for student, _ in queue:         # never sent: the cluster could not grade
        not_graded[student] = stalled[0]
    return graded_on


def _watch(client, running, stalled: list[str], done) -> None:
    """Give up the students out once no node has been able to grade for STALL_SECONDS: Dask would
    keep them waiting for a node forever, and the run would never end."""
    import time
    from autograder.classroom.node import SANDBOX
    last_able = time.monotonic()
    while not done.wait(min(5.0, STALL_SECONDS / 4)):
        workers = client.scheduler_info().get("workers", {})
        if any(w.get("resources", {}).get(SANDBOX) for w in workers.values()):
            last_able = time.monotonic()
        elif time.monotonic() - last_able > STALL_SECONDS or stalled:
            if not stalled:
                stalled.append(f"no node of the cluster could grade for {STALL_SECONDS:.0f} s (each one gone "
                               "or refused)")
            try:   # again each time: a student sent since is given up too
                client.cancel(list(running.futures))
            except RuntimeError:   # the set changed while it was copied: the next round
                pass


def _take(future, student, students, out_dir, results, not_graded, graded_on, layers, show, verbose) -> None:
    """A student's task has ended: write their files, or say why they were not graded."""
    if future.status != "finished":
        not_graded[student] = _why(future)
        return
    got = future.result()
    if not layers:
        layers.extend(got["layers"])
        show(sandbox_line(got["layers"], verbose))
    results[student] = got["result"]
    graded_on[got["node"]] = graded_on.get(got["node"], 0) + 1
    if out_dir is not None:
        runner.write_student(out_dir, student, got["result"], students[student])


def _why(future) -> str:
    from distributed import KilledWorker
    exc = future.exception()
    if isinstance(exc, KilledWorker):
        return (f"the cluster's workers died {exc.allowed_failures + 1} time(s) while grading this student "
                f"(the last: {getattr(exc.last_worker, 'address', 'unknown')})")
    return f"grading failed twice on the cluster ({type(exc).__name__}: {exc})"


def _show_nodes(client, nodes: dict[str, dict], graded_on: dict[str, int], show, verbose: bool) -> None:
    """Each node lost, refused (with why) or lacking a layer; with `verbose`, every node and its layers."""
    from autograder.classroom.node import node_report
    try:   # workers that joined during the run (a dead one's replacement) reported since
        now = client.run(node_report)
    except Exception:
        now = nodes
    lines = [f"cluster: {sum(graded_on.values())} student(s) graded on {len(graded_on)} node(s)"]
    for addr, report in sorted({**nodes, **now}.items()):
        host = report.get("host", "?")
        if addr not in now:
            lines.append(f"  LOST {addr} ({host}) during the run: a student it was grading was graded again "
                         "on another node")
        if report.get("refused"):
            lines.append(f"  REFUSED {addr} ({host}): {report['refused']}")
        elif report.get("missing"):
            lines.append(f"  {addr} ({host}) graded {graded_on.get(addr, 0)} with a layer missing: "
                         + "; ".join(report["missing"]))
        elif verbose:
            lines.append(f"  {addr} ({host}) graded {graded_on.get(addr, 0)}: " + "; ".join(report.get("layers", [])))
    show(terminal_safe("\n".join(lines)))
