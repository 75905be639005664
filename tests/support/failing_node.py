"""A grading node on which one student's task always fails (tests/test_cluster_grading.py): a
simulated fault of the grader, raised in the Dask worker where the real task runs."""
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
