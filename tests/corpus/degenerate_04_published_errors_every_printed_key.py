# lesson: 04_worked_example
# source: tests/degenerate.py (every-printed-key): an answer that does nothing; it must score 0
# expect: wrong published_errors -
# %% published_errors
def published_errors():
    return {"Q1", "K1", "V1", "Q2", "K2", "V2", "scores1", "weights1", "weights2", "head1", "head2",
            "concat"}
