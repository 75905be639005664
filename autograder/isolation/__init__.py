"""Isolate: how student code is kept away from the grader, the course and other students.

  bwrap.py    (grader side) the sandbox the preloaded worker runs in: namespaces and a minimal
              read-only filesystem, built by bubblewrap
  layers.py   (grader side) which mechanisms this machine offers, probed once, for the report
              and `python -m autograder doctor`
  confine.py  (worker side) what each forked child does to itself before running student code:
              its own uid, no capabilities, rlimits, Landlock, seccomp
"""
