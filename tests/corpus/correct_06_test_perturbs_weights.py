# lesson: 06_debugging_projection_reuse
# expect: correct
# A test that changes each projection's weights and demands that the output changes.
# %% test_projections
def test_projections(mha_class):
    torch.manual_seed(3)
    layer = mha_class(8, 2, 0.0).eval()
    x = torch.randn(2, 6, 8)
    with torch.no_grad():
        base = layer(x)
        for name in ("q_project", "k_project", "v_project"):
            w = getattr(layer, name).weight
            saved = w.clone()
            w.add_(torch.randn_like(w))
            assert not torch.allclose(layer(x), base), f"changing {name} changes nothing"
            w.copy_(saved)
