# lesson: 06_debugging_projection_reuse
# expect: wrong FixedMultiHeadAttention kv-reuse-query-projection
# Half a fix: the keys use k_project, the values still use q_project.
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(BuggyMultiHeadAttention):
    def forward(self, x, attn_mask=None):
        B, T, d_model = x.shape
        q, k, v = self.heads(self.q_project(x)), self.heads(self.k_project(x)), self.heads(self.q_project(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if attn_mask is not None:
            ok = attn_mask.bool().unsqueeze(1).expand_as(s)
            s = s.masked_fill(~ok, float("-inf"))
        w = torch.nan_to_num(torch.softmax(s, -1), nan=0.0)
        return self.o_project((w @ v).transpose(1, 2).reshape(B, T, d_model))
