# lesson: 04_worked_example
# source: tests/degenerate.py (empty): an answer that does nothing; it must score 0
# expect: wrong published_errors -
# %% published_errors
def published_errors():
    return set()
