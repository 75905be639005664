"""Grade: the checks' helpers, comparison with the reference, tolerances, and the pytest plugin.

plugin.py     turns autograder/checks/test_<lesson>.py (ordinary pytest modules) into results
checking.py   what a check module imports: the exercise marker, calls, comparisons, lenient loading
compare.py    is the answer the reference's, and if not, which catalogued fingerprint does it match?
student.py    the `student` a check receives: the student's code behind a submission, as data
reference.py  the reference solutions, run from solutions/ (replaced by recorded.py in the kit)
tolerances.py how close is close enough, and why

May import: run, diagnose, load, course. Never isolate (the self-check imports this package).
"""
