"""Grading nodes on which one student's task always fails (tests/test_cluster_grading.py), in the
Dask worker where the real task runs: a simulated fault of the grader, or the worker's death."""
import os

from autograder.classroom.node import GraderPlugin

FAILING_STUDENT = "bob"


class FailsForOneStudent(GraderPlugin):
    async def setup(self, worker):
        from autograder.classroom import runner
        grade_one = runner._grade_one

        def failing(student, notebooks, time_limit):
            if student == FAILING_STUDENT:
                raise RuntimeError("a simulated fault of the grader")
            return grade_one(student, notebooks, time_limit)

        runner._grade_one = failing
        await super().setup(worker)


class DiesForOneStudent(GraderPlugin):
    async def setup(self, worker):
        from autograder.classroom import runner
        grade_one = runner._grade_one

        def dying(student, notebooks, time_limit):
            if student == FAILING_STUDENT:
                os._exit(1)      # as a machine lost: no clean-up, no reply
            return grade_one(student, notebooks, time_limit)

        runner._grade_one = dying
        await super().setup(worker)


class NoSandboxOnNodeOne(GraderPlugin):
    """The worker named 1 is a node where bubblewrap cannot start at all (its binary is gone) and
    the plugin asks for bubblewrap: that node's sandbox cannot start."""

    async def setup(self, worker):
        if worker.name == 1:
            from autograder.isolate import bwrap
            bwrap.find_bwrap = lambda: "/nonexistent/bwrap"
            self.mode = "bwrap"
        await super().setup(worker)
