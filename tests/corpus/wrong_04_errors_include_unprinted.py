# lesson: 04_worked_example
# expect: wrong published_errors -
# Names scores2, which was never printed.
# %% published_errors
def published_errors():
    return {"K1", "Q2", "K2", "scores1", "scores2", "weights1", "weights2", "head1", "head2", "concat"}
