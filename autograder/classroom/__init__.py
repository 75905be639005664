"""Class runs: many students in parallel, resumable, with grades.csv and the class report.

runner.py    grade_many: jobs forked from a preloaded fork server, one sandbox each
preload.py   what the fork server loads once for every job
cluster.py   grade_on_cluster: the same class run on a Dask cluster (one student per task)
node.py      a Dask worker that grades: its sandbox set up once (a WorkerPlugin), the task
accuracy.py  the grader graded: the corpus of known submissions, and its error rates

May import: pipeline and everything below it.
"""
