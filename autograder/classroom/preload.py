"""Everything a grading job loads before its first student, loaded once for the whole class.

`grade_many` starts its parallel jobs from multiprocessing's fork server with this module as
the server's preload (see classroom.py): the server imports it once, and every job is a fork
of that process, so torch, pytest, the reference solutions and the check modules are already
in memory in each job. Importing them in every job instead cost ~3 s of CPU per job.
"""
from __future__ import annotations


def preload() -> None:
    import os
    from autograder.classroom.runner import PRELOAD_LESSONS, _load_grader, job_extras
    from autograder.course import available_lessons
    lessons = [lesson.id for lesson in available_lessons()]
    wanted = os.environ.get(PRELOAD_LESSONS)
    if wanted is not None:   # the class run's lessons: no torch for a class of NumPy lessons
        lessons = [lid for lid in lessons if lid in wanted.split(",")]
    _load_grader(lessons, "torch" in job_extras(lessons))


preload()
