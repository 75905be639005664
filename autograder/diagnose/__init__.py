"""Diagnose: which catalogued mistake explains a failure, and the root cause across checks.

mistakes.py      the mistake catalogue (ids from ../shared/COURSE_SPEC.md, text, fixes): data
fingerprints/    the known-buggy variants a failing answer is compared with: the reference the check
                 passes in, run with one change per mistake
root_cause.py    the failures of one exercise read together, root cause first

May import: course only.
"""
