# lesson: 06_debugging_projection_reuse
# expect: wrong test_projections test-misses-bug
# Checks the key projection only, so a class whose values reuse the query projection passes.
# %% test_projections
def test_projections(mha_class):
    layer = mha_class(8, 2, 0.0)
    layer(torch.randn(2, 5, 8)).sum().backward()
    assert layer.k_project.weight.grad is not None, "k_project is unused"
