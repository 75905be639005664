# lesson: 06_debugging_projection_reuse
# source: tests/degenerate.py (fails-everything): an answer that does nothing; it must score 0
# expect: wrong test_projections test-rejects-correct
# %% test_projections
def test_projections(mha_class):
    raise AssertionError('always')
