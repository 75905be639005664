# lesson: 06_debugging_projection_reuse
# expect: correct
# The fix written with one fused projection call and F.scaled_dot_product_attention.
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout):
        super().__init__()
        self.h, self.p = num_heads, dropout
        self.q_project = nn.Linear(d_model, d_model)
        self.k_project = nn.Linear(d_model, d_model)
        self.v_project = nn.Linear(d_model, d_model)
        self.o_project = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        B, T, D = x.shape
        heads = lambda t: t.view(B, T, self.h, D // self.h).transpose(1, 2)
        q, k, v = heads(self.q_project(x)), heads(self.k_project(x)), heads(self.v_project(x))
        mask = None
        if attn_mask is not None:
            ok = attn_mask.bool()[:, None]
            rows = ok.any(-1, keepdim=True)
            mask = ok | ~rows
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=self.p if self.training else 0.0)
        if attn_mask is not None:
            out = out * rows
        return self.o_project(out.transpose(1, 2).reshape(B, T, D))
