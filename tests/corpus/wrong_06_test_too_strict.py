# lesson: 06_debugging_projection_reuse
# expect: wrong test_projections test-rejects-correct
# Demands bit-identical output from nn.MultiheadAttention: fails correct classes on rounding.
# %% test_projections
def test_projections(mha_class):
    torch.manual_seed(0)
    layer = mha_class(8, 2, 0.0).eval()
    ref = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([layer.q_project.weight, layer.k_project.weight, layer.v_project.weight]))
        ref.in_proj_bias.copy_(torch.cat([layer.q_project.bias, layer.k_project.bias, layer.v_project.bias]))
        ref.out_proj.weight.copy_(layer.o_project.weight); ref.out_proj.bias.copy_(layer.o_project.bias)
        x = torch.randn(2, 5, 8)
        assert torch.equal(layer(x), ref(x, x, x)[0]), "not identical"
