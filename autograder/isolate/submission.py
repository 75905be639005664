"""Isolate: a student's notebook program, run lazily in a sandboxed child, one exercise at a time.

`Submission` runs a Program (see load/notebook.py) in a worker child and keeps a time budget per
exercise and for the whole submission. The checks never see it: they get a `Student`
(run/student.py) that sends its requests here.
"""
from __future__ import annotations

import time

from autograder.grading.student import code_digest
from autograder.i18n import N_
from autograder.isolate.sandbox import DEFAULT_TIME_LIMIT, Sandbox
from autograder.load.notebook import Program, definition_cells, idle_demos  # noqa: F401 - definition_cells: tests
from autograder.run.errors import StudentError, SubmissionFault


class Budget:
    """Seconds left for one whole student: every cell run, every request, and every worker child
    started or ended for it spends from it, so a submission that uses its full time on each
    exercise still cannot hold up the class for long. Once it is spent nothing more of the
    student's runs: no cell, no request, no new child."""

    def __init__(self, seconds: float):
        self.total = seconds
        self.left = seconds
        self.ran_out_at: str | None = None     # where it ran out, for the report (said once)
        # The stand-ins' questions (grading/independence.py) are not the student's time, but not free
        # either: the time added to requests for them has a pot of its own, as large again (the course's
        # heaviest honest case, lesson 10's few-queries check with a wrong combine_attention, ~30 s).
        # Once it is spent, questions are answered {} and the student's own answers stand.
        self.questions = seconds

    def spend(self, seconds: float, questions: float = 0.0) -> None:
        """`seconds` of a request, of which `questions` were added for its questions (not charged)."""
        self.left -= seconds - questions
        self.questions -= questions

    def fault(self, where: str) -> SubmissionFault:
        if self.ran_out_at is None:
            self.ran_out_at = where
        return SubmissionFault("timeout", BUDGET_SPENT)


BUDGET_SPENT = "not run: the time budget for this whole submission ran out (see the note above)"
# What the student's definitions may keep mapped beside a limited call (Submission.limited_call) and
# still give the call all of its limit: the course's keep nothing measurable (lesson 10's setup and
# solution cells: 0.0 MiB); small beside the 40 MiB of lesson 10's memory check, whose (128, Lk)
# array exceeds it by 10 MiB.
DEFINITIONS_ROOM = 4 * 2**20
MAX_RESTARTS = 10   # cells that may hang or stop the worker, per notebook, before the student's own
                    # cells after them are no longer run


class Submission:
    def __init__(self, program: Program, sandbox: Sandbox, time_limit: float = DEFAULT_TIME_LIMIT,
                 budget: Budget | None = None):
        self.program = program
        self.sandbox = sandbox
        self.time_limit = time_limit
        self.budget = budget or Budget(float("inf"))
        self.child = None
        self.cell_errors: dict[str, str] = {}    # cell label -> why it failed to run
        self.skip_cells: set[str] = set()         # cells that hung or crashed the worker
        self.faults: dict[str, SubmissionFault] = {}  # exercise -> the fault that ended it
        self.exercise: str | None = None
        self._remaining: dict[str, float] = {}
        self.executed = 0                         # cells of the program run in the current child
        self.target = len(program.cells)          # cells to run before the current exercise
        self.gave_up: str | None = None           # why the student's own cells stopped running
        self.scratch_cutoff = len(program.cells)  # the student's own cells from here on are not run
        self.idle = idle_demos(program.cells)     # lesson demos whose results nothing graded reads
        self.sent = 0                             # requests sent: what a reply said holds until the next
        self._definitions: dict[int, list] = {}   # checkpoint -> definition_cells up to it (fresh_call)
        self.stand_ins: list[dict] = []           # "substitute" requests in force (grading/independence.py)
        self.answerer = None                      # answers their questions (Child.request's on_ask)
        self.fresh_errors: dict[str, str] = {}    # cell label -> why it failed in a child of its own only

    def _timed(self, action):
        """Run `action` (start or end a child): the time it takes is the student's."""
        started = time.monotonic()
        try:
            return action()
        finally:
            self.budget.spend(time.monotonic() - started)

    def _where(self, label: str) -> str:
        lesson = getattr(getattr(self.program, "lesson", None), "id", "?")
        return f"{lesson}, {label}"

    def _close_child(self):
        if self.child is not None:
            child, self.child = self.child, None
            self._timed(child.close)

    # -- lifecycle ---------------------------------------------------------------------
    # The notebook runs top to bottom, and each exercise is graded on the state its self-check
    # cell would see (program.checkpoints): what passes the self-check in a fresh kernel passes
    # here. Cells run lazily up to the checkpoint of the exercise being graded.
    def _run_until(self, target: int):
        restarts = len(self.skip_cells)
        while True:
            if self.child is None or not self.child.alive or self.executed > target:
                self._close_child()
                if self.budget.left <= 0:
                    raise self.budget.fault(self._where("starting a worker process for it"))
                self.sandbox.load(self.program.imports)   # torch, once per worker: not the student's time
                self.child = self._timed(self.sandbox.spawn)
                self.executed = 0
            restart = False
            for index in range(self.executed, target):
                cell = self.program.cells[index]
                if cell.label in self.skip_cells or cell.label in self.idle \
                        or (cell.kind == "scratch" and index >= self.scratch_cutoff):
                    self.executed = index + 1
                    continue
                if self.budget.left <= 0:
                    raise self.budget.fault(self._where(cell.label))
                self.executed = index + 1
                allowance = min(self.time_limit, self.budget.left)
                fault = None
                started = time.monotonic()
                try:
                    self.child.request("exec", allowance, label=cell.label, source=cell.source)
                except StudentError as err:
                    self.cell_errors[cell.label] = err.describe()
                except SubmissionFault as exc:
                    fault = exc
                finally:
                    self.budget.spend(time.monotonic() - started)
                if fault is None:
                    continue
                self._close_child()
                if fault.kind == "timeout" and allowance < self.time_limit:
                    # cut by the whole submission's budget, not by its own limit: not skipped, and
                    # nothing runs after it
                    self.executed = index
                    raise self.budget.fault(self._where(cell.label))
                what = {"timeout": N_("running the cell did not finish within {seconds} s and was skipped"),
                        "memory": N_("running the cell ran out of memory and was skipped"),
                        "crash": N_("running the cell stopped the worker process (sys.exit, os._exit or a crash) "
                                    "and was skipped")}[fault.kind]
                self.cell_errors[cell.label] = what.format(seconds=f"{self.time_limit:g}")
                self.skip_cells.add(cell.label)
                restarts += 1
                if restarts >= MAX_RESTARTS and self.scratch_cutoff > index:
                    # each restart runs the notebook again: from here on, only the lesson's own
                    # cells and the graded ones run, so hostile cells cannot respawn it without end
                    self.scratch_cutoff = index
                    self.gave_up = (f"{restarts} cells hung or stopped the worker process; your own cells "
                                    f"after {cell.label} were not run (the lesson's and the graded cells were)")
                restart = True   # run everything again without that cell, as if it were cut
                break
            if not restart:
                self._stand_ins_in(self.child)
                return

    def _stand_ins_in(self, child) -> bool:
        """Put the stand-ins in force in `child` (a new one has none; in place already: no change)."""
        done = True
        for args in self.stand_ins:
            started = time.monotonic()
            try:
                done &= bool(child.request("substitute", self._allowance(self.time_limit), **args))
            except StudentError:
                done = False
            finally:
                self.budget.spend(time.monotonic() - started)
        return done

    def substitute(self, stand_ins: list[dict]) -> bool:
        """Stand-ins for helpers while an exercise is graded again (grading/independence.py): in the
        notebook's child now, and in every child started for a call until unsubstitute()."""
        self.stand_ins = list(stand_ins)
        if self.exercise in self.faults:
            return False
        if self.child is None or not self.child.alive or self.executed != self.target:
            self._run_until(self.target)   # the notebook up to the exercise, then the stand-ins
            return self.child is not None and self._stand_ins_in(self.child)
        return self._stand_ins_in(self.child)

    def unsubstitute(self) -> dict:
        """Take the stand-ins back: what they did (op_restore), from the notebook's child."""
        self.stand_ins = []
        if self.child is not None and self.child.alive and self.executed == self.target:
            return self.request("restore")
        return {}

    def _allowance(self, seconds: float) -> float:
        if self.budget.left <= 0:
            raise self.budget.fault(self._where(f"grading {self.exercise}"))
        return min(seconds, self.budget.left)

    def close(self):
        self._close_child()

    # -- requests ----------------------------------------------------------------------
    def begin_exercise(self, exercise: str):
        self.exercise = exercise
        self._remaining.setdefault(exercise, self.time_limit)
        self.target = self.program.checkpoints.get(exercise, len(self.program.cells))

    def request(self, op: str, **args):
        self.sent += 1
        exercise = self.exercise
        if exercise in self.faults:
            raise self.faults[exercise]
        if self.child is None or not self.child.alive or self.executed != self.target:
            self._run_until(self.target)
        budget = self._remaining.get(exercise, self.time_limit)
        child, started = self.child, time.monotonic()
        child.credit = 0.0     # this request's questions only, if it fails before it is sent (a spent budget)
        try:
            return child.request(op, self._allowance(budget), on_ask=getattr(self, "answerer", None),
                                 questions=self.budget.questions, **args)
        except SubmissionFault as fault:
            self._close_child()   # SandboxBroken instead if the worker is gone: not the student's fault
            self.faults[exercise] = fault
            raise
        finally:
            credit = getattr(child, "credit", 0.0)    # the questions' time: not the student's
            spent = time.monotonic() - started - credit
            self.budget.spend(spent + credit, credit)
            if exercise is not None:
                self._remaining[exercise] = budget - spent

    def _fresh_child(self, measured: bool = False):
        """A child spawned for one call alone, in which the student's definitions (definition_cells,
        up to the exercise's checkpoint) have run; the caller ends it. Raises SubmissionFault when the
        time budget runs out on the way. `measured`: child.mapped_at_start is what it mapped before any
        code of the student's ran, {"mapped", "data"} (limited_call)."""
        upto = self.program.checkpoints.get(self.exercise, len(self.program.cells))
        if upto not in self._definitions:   # the same for each of lesson 06's ten subjects
            self._definitions[upto] = definition_cells(self.program.cells[:upto])
        cells = self._definitions[upto]
        self.sandbox.load(self.program.imports)          # torch, once per worker: not the student's time
        # nothing of the student's runs beside a subject: the notebook's child (which could watch
        # the subjects and pass notes from one to the next) is ended, and started again if needed
        self._close_child()
        child = self._timed(lambda: self.sandbox.spawn(subject=True))
        try:
            child.mapped_at_start = child.mapped() if measured else None
            for cell in cells:
                if cell.label in self.skip_cells:
                    continue
                started = time.monotonic()
                try:
                    child.request("exec", self._allowance(self.time_limit), label=cell.label, source=cell.source)
                except StudentError as err:     # as in the notebook's run: the next cells still run
                    self.fresh_errors.setdefault(cell.label, err.describe())
                finally:
                    self.budget.spend(time.monotonic() - started)
            self._stand_ins_in(child)
        except BaseException:
            child.close()
            raise
        return child

    def fresh_call(self, target, args, seconds: float) -> dict:
        """Call `target` in a child of its own, spawned for this call alone: the student's
        definitions (definition_cells, up to the exercise's checkpoint) run in it first, then the call, then
        it is ended with everything it started. It shares no memory, no scratch folder and no
        process with the notebook's child or with another fresh call (lesson 06 runs the student's
        test on each class this way), and it can leave nothing behind for the next one: it starts
        no process or thread (the pid counter), makes no file (the inode counter), and its uid and
        scratch folder's name are drawn at random (isolate/confine.py, worker.py). Other cells run only when they define a name the graded
        code uses (see definition_cells). {"outcome": "returned"} or {"outcome": "raised", "error"}."""
        child = None
        try:
            child = self._fresh_child()
            started = time.monotonic()
            try:
                child.request("call", self._allowance(seconds), on_ask=self.answerer, questions=self.budget.questions,
                              target=target, args=args)
                return {"outcome": "returned"}
            except StudentError as err:
                return {"outcome": "raised", "error": {"type": err.type, "message": err.message,
                                                       "traceback": err.traceback}}
            finally:
                self.budget.spend(time.monotonic() - started, child.credit)
        except SubmissionFault as fault:
            return {"outcome": "raised", "error": {"type": "TimeoutError" if fault.kind == "timeout" else "ProcessError",
                                                   "message": f"the call did not finish: {fault}", "traceback": ""}}
        finally:
            if child is not None:
                child.close()

    def limited_call(self, target, args, memory_bytes: int, seconds: float) -> dict:
        """Call `target` once under a memory limit the kernel enforces: in a fresh child (as
        fresh_call) whose address space its worker limits, from outside and once the student's
        definitions have run, to what it maps just then plus `memory_bytes` (Zygote.limit_memory; the
        child starts no thread to act in between), but never past what it mapped before any code of
        the student's ran plus `memory_bytes` and DEFINITIONS_ROOM: memory the definitions keep to
        free in the call (an mmap'd reserve, an array made at import) is no room for the call. Its
        private writable memory (RLIMIT_DATA) is limited the same way, so that unmapping the
        worker's libraries (address space, never data) is no room either.
        Returns {"result", "peak"} (the peak as tracemalloc saw it in the child: a description,
        never a verdict); raises StudentError for the student's exception and
        SubmissionFault("memory") when an allocation was refused."""
        child = self._fresh_child(measured=True)
        started = time.monotonic()
        try:
            start, allowed = child.mapped_at_start, memory_bytes + DEFINITIONS_ROOM
            limit = child.limit_memory(memory_bytes, at_most=start["mapped"] + allowed,
                                       data_at_most=start["data"] + allowed)
            if limit["limited"] - limit["mapped"] < memory_bytes // 4:   # too little left to even read the request
                kept = (limit["mapped"] - start["mapped"]) / 2**20
                raise SubmissionFault("memory", N_(
                    "not called: the notebook's definitions keep {kept} MiB mapped in that process, and the "
                    "call may use at most {limit} MiB with them").format(
                        kept=f"{kept:.1f}", limit=f"{(memory_bytes + DEFINITIONS_ROOM) / 2**20:.1f}"))
            return child.request("traced_call", self._allowance(seconds), on_ask=self.answerer,
                                 questions=self.budget.questions, target=target, args=args, trace=not self.stand_ins)
        finally:
            self.budget.spend(time.monotonic() - started, child.credit)    # (the stand-ins' questions: ours)
            child.close()

    def source_digest(self) -> str:
        return code_digest(self.program.cells)

    def why_missing(self, name: str) -> str | None:
        if name in self.program.problems:
            return self.program.problems[name]
        if name in self.cell_errors:
            return N_("the cell '{name}' failed to run:").format(name=name) + "\n" + self.cell_errors[name]
        if name in self.fresh_errors:    # ran in the notebook, failed when run again beside a subject
            return (N_("the cell '{name}' failed when it ran again in the separate process this check calls "
                       "it in:").format(name=name) + "\n" + self.fresh_errors[name])
        return None
