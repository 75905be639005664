"""The checks: one ordinary pytest module per lesson, `test_<lesson_id>.py`, run by grading/plugin.py.

A check receives the student's object through the `student` fixture, the reference through
`reference` and its inputs from `rng` (drawn from the course secret when there is one). Add a
check by writing a test with `@exercise("<grade_id>", points=N)`; see ARCHITECTURE.md.

May import: grading, diagnose, run. Never the sandbox: the student kit's self-check runs them.
"""
