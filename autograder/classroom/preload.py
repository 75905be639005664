"""Everything a grading job loads before its first student, loaded once for the whole class.

`grade_many` starts its parallel jobs from multiprocessing's fork server with this module as
the server's preload (see classroom.py): the server imports it once, and every job is a fork
of that process, so torch, pytest, the reference solutions and the check modules are already
in memory in each job. Importing them in every job instead cost ~3 s of CPU per job.
"""
from __future__ import annotations


def preload() -> None:
    import torch
    torch.set_num_threads(1)
    from autograder.course import available_lessons
    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.reference import load_reference
    from autograder import pipeline  # noqa: F401
    lessons = [lesson.id for lesson in available_lessons()]
    for lesson in lessons:
        try:
            load_reference(lesson)
        except Exception:   # a broken solutions/ notebook is reported by the job that needs it
            pass
    try:   # a session that keeps no check imports (and assertion-rewrites) every check module
        run_checks(GradingPlugin({}), lessons)
    except Exception:
        pass


preload()
