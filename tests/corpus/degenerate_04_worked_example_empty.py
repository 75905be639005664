# lesson: 04_worked_example
# source: tests/degenerate.py (empty): an answer that does nothing; it must score 0
# expect: wrong worked_example -
# %% worked_example
def worked_example():
    return {}
