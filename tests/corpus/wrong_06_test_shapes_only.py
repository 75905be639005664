# lesson: 06_debugging_projection_reuse
# expect: wrong test_projections test-misses-bug
# %% test_projections
def test_projections(mha_class):
    layer = mha_class(8, 2, 0.0)
    assert layer(torch.randn(2, 3, 8)).shape == (2, 3, 8)
