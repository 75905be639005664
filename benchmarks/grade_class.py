"""Benchmark: grade a synthetic class with our grader and with `nbgrader autograde`, side by side.

    python benchmarks/grade_class.py [--students N] [--jobs 2] [--skip-nbgrader]

The class has every lesson of the course per student, cycling through four kinds of submission: the
reference solutions, the untouched stubs, buggy notebooks (from tests/corpus/) and broken
files (not JSON). Both graders get the same files. Prints both wall-clock times, the ratio,
and seconds per full-course submission. Not a test: timings on shared machines are noisy.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder.classroom import accuracy  # noqa: E402
from autograder.course import COURSE  # noqa: E402

KINDS = ("correct", "stub", "buggy", "broken")


def build_class(folder: Path, students: int) -> dict[str, dict[str, str]]:
    wrong = {}
    for entry in accuracy.load():
        if entry.expect == "wrong" and entry.cells:
            wrong.setdefault(entry.lesson, entry)
    made = {}
    for i in range(students):
        kind = KINDS[i % len(KINDS)]
        name = f"student{i:03d}_{kind}"
        made[name] = {}
        for lesson in COURSE.values():
            if kind == "correct":
                text = lesson.solution_path.read_text()
            elif kind == "stub":
                text = lesson.released_path.read_text()
            elif kind == "buggy":
                text = accuracy.notebook_for(wrong[lesson.id])
            else:
                text = '{"cells": [ broken'
            made[name][lesson.id] = text
            path = folder / name / f"{lesson.id}.ipynb"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return made


def time_ours(folder: Path, jobs: int) -> float:
    started = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "autograder", "grade", str(folder), "--jobs", str(jobs),
                          "--json", str(folder.parent / "ours.json")], cwd=ROOT, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"our grader failed: {run.stderr[-500:]}")
    return time.perf_counter() - started


def time_nbgrader(course: Path, made: dict) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("MPLBACKEND", None)

    def nbgrader(*args, must_succeed=True):
        run = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                             capture_output=True, text=True)
        if run.returncode != 0 and must_succeed:
            sys.exit(f"nbgrader {' '.join(args)} failed: {run.stderr[-800:]}")
        return run

    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\nc.CourseDirectory.course_id = 'bench'\n")
    for lesson in COURSE.values():
        assignment = f"l{lesson.id[:2]}"
        (course / "source" / assignment).mkdir(parents=True)
        shutil.copy(lesson.solution_path, course / "source" / assignment)
        nbgrader("db", "assignment", "add", assignment)
        nbgrader("generate_assignment", assignment, "--force")
        for student, notebooks in made.items():
            folder = course / "submitted" / student / assignment
            folder.mkdir(parents=True)
            (folder / f"{lesson.id}.ipynb").write_text(notebooks[lesson.id])
    started = time.perf_counter()
    failed = 0
    for lesson in COURSE.values():
        # nbgrader exits non-zero when a submission is not JSON; it still grades the others
        run = nbgrader("autograde", f"l{lesson.id[:2]}", "--force", "--create", must_succeed=False)
        failed += run.stderr.count("There was an error processing assignment '")  # once per notebook
    print(f"nbgrader autograde could not process {failed} of {len(made) * len(COURSE)} notebooks")
    return time.perf_counter() - started


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-nbgrader", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        tmp = Path(tmp)
        made = build_class(tmp / "class", args.students)
        n = len(made)
        ours = time_ours(tmp / "class", args.jobs)
        print(f"class: {n} students x {len(COURSE)} lessons ({', '.join(KINDS)} in turn)")
        print(f"ours     (--jobs {args.jobs}): {ours:8.1f} s   {ours / n:6.2f} s per full-course submission")
        if not args.skip_nbgrader:
            theirs = time_nbgrader(tmp / "nbgrader", made)
            print(f"nbgrader autograde     : {theirs:8.1f} s   {theirs / n:6.2f} s per full-course submission")
            print(f"ratio nbgrader / ours  : {theirs / ours:8.1f} x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
