"""Load: read a submitted notebook, whatever state it is in, and decide what code to run.

notebook.py      the notebook -> a Program (cells to run, checkpoints, problems); bounded parsing
kernel_state.py  the self-check's note on names a kernel holds that the saved notebook does not

May import: autograder.course. Nothing else of the grader.
"""
