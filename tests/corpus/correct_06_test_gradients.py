# lesson: 06_debugging_projection_reuse
# expect: correct
# A test that checks that every projection receives a gradient.
# %% test_projections
def test_projections(mha_class):
    torch.manual_seed(1)
    layer = mha_class(12, 3, 0.0)
    layer(torch.randn(2, 4, 12)).pow(2).sum().backward()
    for name in ["q_project", "k_project", "v_project", "o_project"]:
        g = getattr(layer, name).weight.grad
        assert g is not None and g.abs().max() > 0, f"{name} gets no gradient"
