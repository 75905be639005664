"""Grade many students: in parallel, with a progress bar, resumable, writing per-student files.

Each parallel job is a grader process with a preloaded worker (sandbox.py), so torch is imported
once per job, not once per student; as root the jobs share one worker (launch.prelaunch_shared),
so torch is imported once per class run. With `out_dir`, each student gets
`<out_dir>/students/<student>/results.json` and `feedback.md` (in a folder of their own, so no
student's name can collide with a class-level file), written atomically after that student
is graded, plus a `fingerprint` of the files graded; a restarted run skips students whose
fingerprint still matches, so a killed run loses nothing and repeats nothing. `grades.csv`
and `class-report.html` (class_report.py) are rewritten at the end from every results.json present.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from autograder.load.notebook import digest_regular_file
from autograder.report.class_report import student_folder
from autograder.report.results import (feedback_markdown, sandbox_line, summary, terminal_safe, write_atomic,
                                       write_results)

_sandbox = None
_init_error: Exception | None = None
_grader_loaded = False
PRELOAD_LESSONS = "AUTOGRADER_PRELOAD_LESSONS"    # the lessons of a class run, for its fork server


def _job_init(memory_bytes, allow_unsandboxed=False, prelaunched=(), taken=None, lessons=(), main_pid=None,
              mode="auto", huge_pages=False):
    """Set up one job: its sandbox, with the worker the main process started for it (one of
    `prelaunched`, (pid, control socket) pairs; `taken` counts the ones already adopted), and
    the grader's side of `lessons` (the lessons it will grade). torch is imported, here and in
    the worker, only when one of those lessons uses it. With `main_pid`, the job ends when that
    process does (see _end_with). `mode`: Sandbox's; `huge_pages`: see grade_many (a cluster's node)."""
    global _sandbox
    if main_pid is not None:
        _end_with(main_pid)
    from autograder.isolate.sandbox import Sandbox
    from autograder.isolate.worker import HUGE_PAGES
    extras = job_extras(lessons) + ((HUGE_PAGES,) if huge_pages else ())
    _sandbox = Sandbox(memory_bytes=memory_bytes, allow_unsandboxed=allow_unsandboxed, extras=extras, mode=mode)
    # a job ends its worker (and reaps it) when it exits, not when the kernel notices
    import multiprocessing.util
    multiprocessing.util.Finalize(_sandbox, _sandbox.close, exitpriority=10)
    mine = None
    if prelaunched and taken is not None:
        with taken.get_lock():
            if taken.value < len(prelaunched):
                mine = taken.value
                taken.value += 1
    for index, (pid, control, shared) in enumerate(prelaunched):
        if index == mine:
            _sandbox.adopt(pid, control, shared=shared)
        else:
            control.close()            # another job's worker (or its socket to a shared one)
    if mine is None:
        _sandbox.begin()   # the worker loads its modules while this process loads the grader's
    _load_grader(lessons, "torch" in extras)
    try:
        _sandbox.check()   # start the worker now, so the report can name its layers from the start
    except Exception as exc:   # said once per student (below), never hidden by a broken pool
        global _init_error
        _init_error = exc


def _end_with(main_pid: int) -> None:
    """A job's parent is multiprocessing's fork server, not the grader: killed (a TA's `kill`, a CI
    time-out), the grader would leave its jobs waiting forever to hand in a result, each with its
    worker and torch loaded. A thread of the job waits for the grader's end and ends the job
    (its worker goes with it: bubblewrap's --die-with-parent)."""
    import select

    def watch():
        try:
            fd = os.pidfd_open(main_pid)
        except (AttributeError, OSError):   # no pidfd (Linux < 5.3): look twice a second
            while True:
                try:
                    os.kill(main_pid, 0)
                except ProcessLookupError:
                    break
                except OSError:
                    pass
                select.select([], [], [], 0.5)
        else:
            select.select([fd], [], [])
        os._exit(1)

    threading.Thread(target=watch, name="end-with-the-grader", daemon=True).start()


def job_extras(lessons) -> tuple[str, ...]:
    """What the workers preload beyond NumPy and matplotlib for `lessons` (worker.EXTRAS)."""
    from autograder.course import COURSE
    from autograder.isolate.worker import EXTRAS
    from autograder.load.notebook import lesson_imports
    used = set().union(*(lesson_imports(COURSE[lid]) for lid in lessons if lid in COURSE))
    return tuple(sorted(used & set(EXTRAS)))


def _load_grader(lessons, torch_too: bool) -> None:
    """Import the grader's modules, run the reference solutions and import the check modules of
    `lessons`, once per process (a fork server's jobs inherit it: preload.py)."""
    global _grader_loaded
    if _grader_loaded:
        return
    _grader_loaded = True
    import gc
    gc.disable()   # no collection while torch and the grader load (~0.3 s): one at the end (worker.zygote)
    try:
        if torch_too:
            import torch
            torch.set_num_threads(1)
        from autograder.grading.plugin import GradingPlugin, run_checks
        from autograder.grading.reference import load_reference
        from autograder import pipeline  # noqa: F401
        for lesson in lessons:
            try:
                load_reference(lesson)
            except Exception:   # a broken solutions/ notebook is reported where it is needed
                pass
        try:   # a session that keeps no check imports (and assertion-rewrites) the check modules
            run_checks(GradingPlugin({}), list(lessons))
        except Exception:
            pass
    finally:
        gc.enable()
    gc.collect()


def _grade_one(student: str, notebooks: dict[str, str], time_limit: float):
    """Grade one student in this job; returns (student, results, the sandbox's layers)."""
    from autograder.pipeline import grade_student
    if _init_error is not None:
        raise _init_error
    result = grade_student({k: Path(v) for k, v in notebooks.items()}, _sandbox, time_limit)
    return student, result, _sandbox.describe()


def fingerprint(notebooks: dict[str, Path]) -> str:
    h = hashlib.sha256()
    for lesson in sorted(notebooks):
        h.update(lesson.encode())
        try:   # never follows a link, blocks on a FIFO, or holds the whole file (see notebook.py)
            digest_regular_file(Path(notebooks[lesson]), h)
        except OSError as exc:
            h.update(f"unreadable: {exc}".encode())
    from autograder.course import CHECKS
    for check in sorted(CHECKS.glob("test_*.py")):  # a changed check regrades everyone
        h.update(check.read_bytes())
    return h.hexdigest()


def grade_many(students: dict[str, dict[str, Path]], *, jobs: int | None = None, time_limit: float = 10.0,
               memory_limit: float = 2.0, out_dir: Path | None = None, show=print,
               progress: bool = False, allow_unsandboxed: bool = False, brief: bool = False,
               verbose: bool = False) -> dict[str, dict]:
    memory_bytes = int(memory_limit * 1024 ** 3)
    results, todo = pending(students, out_dir)
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    lessons = sorted({lesson for notebooks in todo.values() for lesson in notebooks})

    layers: list[str] = []
    class_files = None          # the thread writing grades.csv and the report (parallel jobs)
    class_files_failed: list[BaseException] = []   # what it raised: raised here, as with one job

    def finish(student, result, sandbox_layers):
        if not layers:
            layers.extend(sandbox_layers)
            show(sandbox_line(sandbox_layers, verbose))
        results[student] = result
        if out_dir is not None:
            write_student(out_dir, student, result, students[student])

    if jobs == 1:
        _job_init(memory_bytes, allow_unsandboxed, lessons=lessons)
        try:
            for student, notebooks in progress_bar(todo.items(), progress, len(todo)):
                finish(*_grade_one(student, {k: str(v) for k, v in notebooks.items()}, time_limit))
        finally:
            _sandbox.close()
    else:
        import multiprocessing
        # Jobs fork from a fork server that has already loaded what every job needs (see
        # job_preload.py); a fork server, not a plain fork of this process, so no job inherits
        # threads or open files of ours.
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["autograder.classroom.preload"])
        os.environ[PRELOAD_LESSONS] = ",".join(lessons)   # read by the fork server's preload
        # The jobs' workers start now, in bubblewrap, and load torch while the fork server loads
        # the grader; each job adopts one (sandbox.prelaunch). The workers' parent is this process,
        # which ends and reaps them when the jobs are done.
        from autograder.isolate.sandbox import _kill_group, prelaunch, prelaunch_shared
        from autograder.isolate.worker import HUGE_PAGES
        # huge pages make each of a student's ~20 children cheaper, for ~0.5 s once per worker
        extras = job_extras(lessons) + ((HUGE_PAGES,) if len(todo) >= 4 * jobs else ())
        # as root, one worker for every job (torch loaded once); otherwise one worker per job
        shared = prelaunch_shared(memory_bytes, extras, jobs)
        if shared is not None:
            prelaunched = [(shared[0], control, True) for control in shared[1]]
        else:
            prelaunched = [(proc, control, False) for proc, control in
                           (w for w in (prelaunch(memory_bytes, extras) for _ in range(jobs)) if w is not None)]
        taken = ctx.Value("i", 0)
        pool = None
        try:
            with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_job_init,
                                     initargs=(memory_bytes, allow_unsandboxed,
                                               [(proc.pid, control, flag) for proc, control, flag in prelaunched],
                                               taken, lessons, os.getpid())) as pool:
                futures = [pool.submit(_grade_one, s, {k: str(v) for k, v in nbs.items()}, time_limit)
                           for s, nbs in todo.items()]
                for future in progress_bar(as_completed(futures), progress, len(futures)):
                    finish(*future.result())
                if out_dir is not None:   # drawn while the jobs and their workers end (~1 s each)
                    class_files = threading.Thread(target=write_class_files, name="class-report",
                                                   args=(out_dir, {s: results[s] for s in students}, show,
                                                         class_files_failed))
                    class_files.start()
        finally:
            for proc, control, _ in prelaunched:
                control.close()
            for proc in {id(proc): proc for proc, _, _ in prelaunched}.values():
                _kill_group(proc)
            pool = taken = None   # the pool keeps the counter's semaphore in its initargs
            _stop_helpers()
            os.environ.pop(PRELOAD_LESSONS, None)

    ordered = {s: results[s] for s in students}
    if class_files is not None:
        class_files.join()
        if class_files_failed:
            raise class_files_failed[0]
    elif out_dir is not None:
        write_class_files(out_dir, ordered, show)
    show_grades(ordered, show, progress, brief, verbose)
    return ordered


def pending(students: dict[str, dict[str, Path]], out_dir: Path | None) -> tuple[dict[str, dict], dict]:
    """(the results a previous run of `out_dir` wrote for these very files, the students still to grade)."""
    results: dict[str, dict] = {}
    todo = {}
    for student, notebooks in students.items():
        if out_dir is not None:
            done = _previous(student_folder(out_dir, student), fingerprint(notebooks))
            if done is not None:
                results[student] = done
                continue
        todo[student] = notebooks
    return results, todo


def write_student(out_dir: Path, student: str, result: dict, notebooks: dict[str, Path]) -> None:
    """One student's files, the fingerprint last: a run killed before it regrades the student.
    feedback.md is in the chosen language ($AUTOGRADER_LANG, `grade --lang`); results.json stays in
    English here: a later run reads it back (_previous) and writes the reports from it."""
    folder = student_folder(out_dir, student)
    write_results(folder / "results.json", result, lang="en")
    write_atomic(folder / "feedback.md", terminal_safe(feedback_markdown(student, result)))
    write_atomic(folder / "fingerprint", fingerprint(notebooks) + "\n")


def show_grades(ordered: dict[str, dict], show, progress: bool, brief: bool, verbose: bool) -> None:
    if progress:
        for student, result in ordered.items():
            show(f"{student:<24} {result['score']:g}/{result['max_score']:g}")
    else:
        for student, result in ordered.items():
            show(summary(result, title=f"{student}", detail=not brief, verbose=verbose))


def write_class_files(out_dir: Path, ordered: dict[str, dict], show, failed: list | None = None) -> None:
    """grades.csv, then the class report. In a thread (`failed` given), what the grades.csv write
    raises is kept in `failed` for the caller to raise: a thread's exception would only be printed,
    and the run would end with status 0 and no grades.csv."""
    try:
        write_atomic(out_dir / "grades.csv", grades_csv(ordered))
    except BaseException as exc:
        if failed is None:
            raise
        failed.append(exc)
        return
    try:   # the grades are written already; a report that fails must not lose them
        from autograder.report.class_report import write_class_report   # matplotlib is imported only here
        write_class_report(out_dir, ordered)
    except Exception as exc:
        show(terminal_safe(f"class-report.html was not written ({type(exc).__name__}: {exc}); "
             "grades.csv and every student's files are complete"))


def _stop_helpers() -> None:
    """End and reap multiprocessing's fork server and resource tracker now: left alone, they
    outlive the grader (orphaned to init) until they notice it is gone."""
    import gc
    import signal
    from multiprocessing import forkserver, resource_tracker
    gc.collect()   # the shared counter's semaphore would restart the tracker to unregister itself
    # The fork server holds nothing to save, but asked to stop it would run the interpreter's whole
    # shutdown with torch and the grader loaded (~0.6 s at the end of every class run): killed.
    # Its jobs have ended (the pool was shut down, waiting for them).
    server_pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    if server_pid:
        try:
            os.kill(server_pid, signal.SIGKILL)
        except OSError:
            pass
    for helper in (getattr(forkserver, "_forkserver", None), getattr(resource_tracker, "_resource_tracker", None)):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            try:
                stop()
            except (OSError, ChildProcessError):
                pass


def progress_bar(iterable, enabled: bool, total: int):
    if not enabled:
        return iterable
    from tqdm import tqdm
    return tqdm(iterable, total=total, desc="grading", unit="student")


def _previous(folder: Path, fp: str) -> dict | None:
    try:
        if (folder / "fingerprint").read_text().strip() == fp:
            return json.loads((folder / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return None


def _cell(text: str) -> str:
    """A spreadsheet reads a cell that starts with = + - @ as a formula: a folder named
    '=HYPERLINK(...)' must stay text."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def grades_csv(results: dict[str, dict]) -> str:
    from autograder.report.results import by_exercise
    columns: list[str] = []
    rows = []
    for student, result in results.items():
        row = {"student": _cell(student), "score": result["score"], "max_score": result["max_score"]}
        for (lesson, exercise), entry in by_exercise(result).items():
            col = f"{lesson}:{exercise}"
            if col not in columns:
                columns.append(col)
            row[col] = entry["score"]
        rows.append(row)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, ["student", "score", "max_score"] + columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
