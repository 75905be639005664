# lesson: 06_debugging_projection_reuse
# expect: correct
# A test that recomputes attention by hand from the layer's own weights and compares outputs.
# %% test_projections
def test_projections(mha_class):
    torch.manual_seed(2)
    d, h = 8, 4
    layer = mha_class(d, h, 0.0).eval()
    x = torch.randn(3, 5, d)
    with torch.no_grad():
        split = lambda t: t.view(3, 5, h, d // h).transpose(1, 2)
        q, k, v = split(layer.q_project(x)), split(layer.k_project(x)), split(layer.v_project(x))
        ctx = F.scaled_dot_product_attention(q, k, v)
        expected = layer.o_project(ctx.transpose(1, 2).reshape(3, 5, d))
        got = layer(x)
    assert torch.allclose(got, expected, atol=1e-5), "output differs from attention with separate projections"
