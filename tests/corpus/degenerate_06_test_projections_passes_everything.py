# lesson: 06_debugging_projection_reuse
# source: tests/degenerate.py (passes-everything): an answer that does nothing; it must score 0
# expect: wrong test_projections test-misses-bug
# %% test_projections
def test_projections(mha_class):
    pass
