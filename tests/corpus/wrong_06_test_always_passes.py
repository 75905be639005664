# lesson: 06_debugging_projection_reuse
# expect: wrong test_projections test-misses-bug
# %% test_projections
def test_projections(mha_class):
    pass
