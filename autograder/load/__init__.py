"""Load: read a submitted notebook, whatever state it is in, and decide what code to run.

notebook.py      the notebook -> a Program (cells to run, checkpoints, problems)
reading.py       the notebook file -> its cells, at a bounded cost to the grader whatever it holds
kernel_state.py  the self-check's note on names a kernel holds that the saved notebook does not

May import: autograder.course. Nothing else of the grader.
"""
