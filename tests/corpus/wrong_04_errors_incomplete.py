# lesson: 04_worked_example
# expect: wrong published_errors -
# Only the products, not what follows from them.
# %% published_errors
def published_errors():
    return {"K1", "Q2", "K2"}
