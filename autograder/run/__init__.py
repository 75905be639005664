"""Run: call a student's code and turn every answer into plain data.

wire.py      the data format between the grader and the student's process (no pickle)
executor.py  runs cells and answers requests, in the sandboxed child or in a student's kernel
errors.py    what can go wrong in a call (StudentError, SubmissionFault, ...)

These modules are what the sandboxed worker imports, so they import nothing else of the grader.
"""
