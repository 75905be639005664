"""Benchmark: how long a student waits for a grade, and where the seconds go.

    python benchmarks/grade_speed.py [--repeat 3] [--students 12] [--jobs 2] [--skip-class]
                                     [--baseline DIR]

Prints, for this checkout (and, with --baseline, for another checkout of the course such as an
older commit unpacked with `git archive`, measured in the same run, taking turns):

  wall      the whole `python -m autograder grade` command, best of --repeat: one NumPy lesson
            (01), one PyTorch lesson (05), lesson 10 (whose memory check runs one call in a fresh
            child under a memory limit), one student's full course (solutions/)
  breakdown one student's full course graded in one fresh process, timed from inside: start-up
            (the interpreter, then the grader's imports), the isolation probe, the sandbox start
            (the worker's own imports, as it reports them), children spawned, the reference
            solutions, each lesson's cell execution and calls into the student's code, the checks
            (the rest of the pytest session: comparisons, diagnosis), the report, and whether the
            grader imported torch; then the same
            process grades a full course of typical wrong answers and the correct one again, so
            a wrong answer's diagnosis can be compared with a correct answer's grading
  selfcheck one self-check cell per exercise, in a plain Python process as a kernel would run it
            (the setup cell and the solution cell first, untimed); the first cell of a lesson
            pays the checker's imports
  class     `grade CLASS --jobs N` on a class where one student in three submits the solutions
            and two in three typical wrong answers (tests/corpus/, a different one per student
            where the corpus has enough), per full-course submission

Not a test: timings on a shared machine are noisy. Each figure is the best of --repeat runs,
and the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMPY_LESSON = "01_scaled_dot_product_attention"
TORCH_LESSON = "05_multi_head_attention"
FLASH_LESSON = "10_flash_attention"   # its memory check: one call in a fresh child under a memory limit


def env_for(root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("MPLBACKEND", None)
    return env


def wall(root: Path, *args: str) -> float:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, *args], cwd=root, env=env_for(root), capture_output=True, text=True)
    took = time.perf_counter() - started
    if run.returncode != 0:
        sys.exit(f"{' '.join(args)} failed in {root}: {run.stderr[-800:]}")
    return took


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------------------------ breakdown

BREAKDOWN = r'''
import json, sys, time, tempfile
T0 = time.perf_counter()
from pathlib import Path
ROOT = Path(sys.argv[1])
stats = {}
import autograder.__main__, autograder.classroom.runner as runner        # what `grade` imports first
stats["grader imports"] = time.perf_counter() - T0
from autograder.isolate import sandbox as sb, submission as subm
from autograder.grading import plugin as pl, reference as ref
from autograder.report import results as res
from autograder import pipeline

acc = {}
current = ["-"]
def add(key, dt):
    acc[key] = acc.get(key, 0.0) + dt

def timed(owner, name, key, per_lesson=False):
    orig = getattr(owner, name)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return orig(*a, **k)
        finally:
            add(key(a, k) if callable(key) else key, time.perf_counter() - t)
    setattr(owner, name, wrapper)
    return orig

timed(sb.Sandbox, "_start", "sandbox start (worker ready)")
orig_spawn = sb.Sandbox.spawn
def spawn(self, *a, **k):
    started = self._proc is None or self._proc.poll() is not None
    t = time.perf_counter()
    try:
        return orig_spawn(self, *a, **k)
    finally:
        dt = time.perf_counter() - t
        if not started:
            add("children spawned", dt)
            acc["children"] = acc.get("children", 0) + 1
sb.Sandbox.spawn = spawn
orig_begin = subm.Submission.begin_exercise
def begin(self, exercise, *a, **k):
    current[0] = self.program.lesson.id
    return orig_begin(self, exercise, *a, **k)
subm.Submission.begin_exercise = begin
timed(sb.Child, "request", lambda a, k: ("exec " if a[1] == "exec" else "calls ") + current[0])
timed(sb.Sandbox, "end", "children ended")
timed(ref, "load_reference", "reference solutions")
ref.load_reference.cache_clear = lambda: None
pl.load_reference = ref.load_reference
timed(pl, "run_checks", "pytest sessions")
pipeline.run_checks = pl.run_checks
timed(res, "summary", "report")
runner.summary = res.summary
for name in ("write_json", "write_results"):   # the name of the writer at each commit measured
    if hasattr(runner, name):
        timed(runner, name, "report")

t = time.perf_counter()
from autograder.isolate.doctor import quick_probe
quick_probe()
stats["isolation probe"] = time.perf_counter() - t

course = {p.stem: p for p in sorted((ROOT / "solutions").glob("*.ipynb"))}
wrong = {}
for name, path in json.loads(sys.argv[2]).items():
    wrong[name] = Path(path)

def grade(students):
    acc.clear()
    t = time.perf_counter()
    runner.grade_many(students, jobs=1, show=lambda *_: None)
    return time.perf_counter() - t, dict(acc)

total, first = grade({"solutions": course})
stats["grade_many (first student)"] = total
stats.update(first)
stats["torch in grader"] = "torch" in sys.modules
again = {}
for label, students in (("wrong answers", {"w": wrong}), ("correct again", {"c": course})):
    took, parts = grade(students)
    again[label] = took - parts.get("sandbox start (worker ready)", 0.0)
print(json.dumps({"stats": stats, "again": again}))
'''


def breakdown(root: Path, wrong: dict[str, Path]) -> dict:
    run = subprocess.run([sys.executable, "-c", BREAKDOWN, str(root), json.dumps({k: str(v) for k, v in wrong.items()})],
                         cwd=root, env=env_for(root), capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"the breakdown failed in {root}: {run.stderr[-1500:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def show_breakdown(label: str, data: dict, interpreter: float) -> None:
    stats = data["stats"]
    grade = stats.pop("grade_many (first student)")
    spawned = stats.pop("children", 0)
    checks = stats.get("pytest sessions", 0.0) - sum(v for k, v in stats.items() if isinstance(v, float) and (
        k.startswith(("exec ", "calls ")) or k in ("reference solutions", "children spawned", "children ended")))
    print(f"\n  breakdown, {label} (one student's full course, seconds)")
    print(f"    {'interpreter start':<40} {interpreter:6.2f}")
    for key in ("grader imports", "isolation probe", "sandbox start (worker ready)"):
        print(f"    {key:<40} {stats.get(key, 0.0):6.2f}")
    if "worker imports" in stats:
        print(f"    {'  of which the worker imports':<40} {stats['worker imports']:6.2f}")
    print(f"    {'children spawned (' + str(spawned) + ')':<40} {stats.get('children spawned', 0.0):6.2f}")
    print(f"    {'children ended':<40} {stats.get('children ended', 0.0):6.2f}")
    print(f"    {'reference solutions':<40} {stats.get('reference solutions', 0.0):6.2f}")
    for key in sorted(k for k in stats if k.startswith("exec ")):
        lesson = key.split(" ", 1)[1]
        print(f"    {'cells + calls ' + lesson[:24]:<40} {stats[key]:6.2f} + {stats.get('calls ' + lesson, 0.0):.2f}")
    print(f"    {'checks (comparisons, diagnosis, pytest)':<40} {checks:6.2f}")
    print(f"    {'report':<40} {stats.get('report', 0.0):6.2f}")
    listed = sum(v for k, v in stats.items() if isinstance(v, float) and k not in ("grader imports", "isolation probe"))
    listed -= stats.get("pytest sessions", 0.0) - checks
    print(f"    {'job set-up (the rest: imports, start)':<40} {grade - listed:6.2f}")
    print(f"    {'grading, all of the above after start-up':<40} {grade:6.2f}")
    print(f"    torch imported by the grader process: {stats.get('torch in grader')}")
    again = data["again"]
    print(f"    then, in the same process, without the sandbox start: wrong answers {again['wrong answers']:.2f} s, "
          f"correct answers {again['correct again']:.2f} s "
          f"(ratio {again['wrong answers'] / max(again['correct again'], 1e-9):.2f})")


# ------------------------------------------------------------------------------------ self-check

SELFCHECK = r'''
import contextlib, io, json, sys, time
from pathlib import Path
lesson = sys.argv[1]
nb = json.loads(Path("solutions", lesson + ".ipynb").read_text())
ns = {"__name__": "__main__"}
times = {}
for cell in nb["cells"]:
    if cell["cell_type"] != "code":
        continue
    meta = cell.get("metadata", {})
    tags, grade = meta.get("tags", []), meta.get("nbgrader", {})
    source = "".join(cell["source"])
    if "setup" in tags or grade.get("solution"):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, "cell", "exec"), ns)
    elif "self-check" in tags:
        t = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, "cell", "exec"), ns)
        times[grade.get("grade_id", "?")] = time.perf_counter() - t
print(json.dumps(times))
'''


def selfcheck(root: Path, lesson: str) -> dict[str, float]:
    run = subprocess.run([sys.executable, "-c", SELFCHECK, lesson], cwd=root, env=dict(env_for(root), MPLBACKEND="Agg"),
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"the self-check of {lesson} failed in {root}: {run.stderr[-800:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------ the class

def build_class(folder: Path, students: int, lessons=None) -> dict[str, dict[str, Path]]:
    """One student in three submits the solutions, two in three typical wrong answers (a
    different corpus entry per student and lesson, as far as the corpus goes); `lessons`: only these
    (to compare with a checkout that has fewer lessons on the same work)."""
    sys.path.insert(0, str(ROOT))
    from autograder.classroom import accuracy
    from autograder.course import COURSE
    wrong: dict[str, list] = {}
    for entry in accuracy.load():
        if entry.expect == "wrong" and entry.cells:
            wrong.setdefault(entry.lesson, []).append(entry)
    made = {}
    for i in range(students):
        kind = "correct" if i % 3 == 0 else "wrong"
        name = f"student{i:03d}_{kind}"
        made[name] = {}
        for lesson in COURSE.values():
            if lessons and lesson.id not in lessons:
                continue
            if kind == "correct":
                text = lesson.solution_path.read_text()
            else:
                entries = wrong[lesson.id]
                text = accuracy.notebook_for(entries[(i * 7) % len(entries)])
            path = folder / name / f"{lesson.id}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            made[name][lesson.id] = path
    return made


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--students", type=int, default=12)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout of the course, measured in turn")
    parser.add_argument("--skip-class", action="store_true")
    parser.add_argument("--only", choices=("wall", "breakdown", "selfcheck", "class"), nargs="+")
    parser.add_argument("--lessons", nargs="+", metavar="LESSON_ID",
                        help="the class's lessons (default: every lesson of this checkout)")
    args = parser.parse_args(argv)
    roots = {"this checkout": ROOT}
    if args.baseline:
        roots["baseline"] = args.baseline.resolve()
    parts = set(args.only or ("wall", "breakdown", "selfcheck", "class"))
    if args.skip_class:
        parts.discard("class")
    print(f"{os.cpu_count()} cores; {load()}")
    interpreter = {label: min(wall(root, "-c", "pass") for _ in range(args.repeat)) for label, root in roots.items()}

    if "wall" in parts:
        targets = {"one NumPy lesson (01)": f"solutions/{NUMPY_LESSON}.ipynb",
                   "one PyTorch lesson (05)": f"solutions/{TORCH_LESSON}.ipynb",
                   "lesson 10 (memory-limited)": f"solutions/{FLASH_LESSON}.ipynb",
                   "one student's full course": "solutions/"}
        best = {(label, what): float("inf") for label in roots for what in targets}
        for _ in range(args.repeat):
            for what, path in targets.items():
                for label, root in roots.items():   # taking turns; a checkout without the lesson shows inf
                    if (root / path).exists():
                        best[label, what] = min(best[label, what], wall(root, "-m", "autograder", "grade", path))
        print(f"\nwall time of `python -m autograder grade ...`, best of {args.repeat} (seconds)")
        print(f"  {'':<28}" + "".join(f"{label:>16}" for label in roots))
        for what in targets:
            print(f"  {what:<28}" + "".join(f"{best[label, what]:16.2f}" for label in roots))
        print(f"  ({load()})")

    with tempfile.TemporaryDirectory(prefix="grade-speed-") as tmp:
        tmp = Path(tmp)
        made = build_class(tmp / "class", max(args.students, 2), args.lessons)
        wrong_course = made["student001_wrong"]
        if "breakdown" in parts:
            for label, root in roots.items():
                best_data = None
                for _ in range(args.repeat):
                    data = breakdown(root, wrong_course)
                    if best_data is None or data["stats"]["grade_many (first student)"] < \
                            best_data["stats"]["grade_many (first student)"]:
                        best_data = data
                show_breakdown(f"{label}, best of {args.repeat}", best_data, interpreter[label])
            print(f"  ({load()})")

        if "selfcheck" in parts:
            print(f"\nself-check cells, seconds per cell (best of {args.repeat}; the first cell of a lesson "
                  "imports the checker)")
            for label, root in roots.items():
                worst, first = 0.0, 0.0
                lines = []
                for lesson in sorted(p.stem for p in (root / "solutions").glob("*.ipynb")):
                    runs = [selfcheck(root, lesson) for _ in range(args.repeat)]
                    per = {ex: min(r[ex] for r in runs) for ex in runs[0]}
                    lines.append(f"    {lesson[:28]:<30}" + "  ".join(f"{ex} {t:.2f}" for ex, t in per.items()))
                    worst = max(worst, *per.values())
                print(f"  {label}: slowest {worst:.2f} s")
                print("\n".join(lines))
            print(f"  ({load()})")

        if "class" in parts:
            n = len(made)
            print(f"\nclass grading: {n} students x {len(next(iter(made.values())))} lessons, one in three correct, two in three typical "
                  f"wrong answers, --jobs {args.jobs}, best of {args.repeat}")
            best = {label: float("inf") for label in roots}
            for _ in range(args.repeat):
                for label, root in roots.items():
                    best[label] = min(best[label], wall(root, "-m", "autograder", "grade", str(tmp / "class"),
                                                       "--jobs", str(args.jobs)))
            for label in roots:
                print(f"  {label:<16} {best[label]:7.2f} s   {best[label] / n:.2f} s per full-course submission")
            print(f"  ({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
