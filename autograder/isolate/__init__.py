"""Isolate: how student code is kept away from the grader, the course and other students.

sandbox.py     (grader side) starts the preloaded worker and talks to its children, with deadlines
launch.py      (grader side) starts worker processes (early, for a class run) and kills process trees
submission.py  (grader side) a notebook's Program run lazily in a child, within its time budget
bwrap.py       (grader side) the sandbox the worker runs in: namespaces and a minimal read-only
               filesystem, built by bubblewrap
doctor.py      (grader side) which layers protect grading here, shown by trying
worker.py      (worker side) the preloaded zygote that forks one confined child per submission
confine.py     (worker side) what each forked child does to itself before running student code:
               its own uid, no capabilities, rlimits, Landlock, seccomp

May import: run, load, course. The worker side imports only run/ (see bwrap.WORKER_MODULES).
"""
