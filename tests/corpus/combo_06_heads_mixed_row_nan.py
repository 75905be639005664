# lesson: 06_debugging_projection_reuse
# expect: wrong FixedMultiHeadAttention heads-mixed masked-row-nan
# view without transpose, NaN rows.
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(BuggyMultiHeadAttention):
    def heads(self, t):
        B, T, _ = t.shape
        return t.view(B, self.num_heads, T, self.d_k)

    def forward(self, x, attn_mask=None):
        B, T, d_model = x.shape
        q = self.heads(self.q_project(x))                               # (B, h, T, d_k)
        k = self.heads(self.k_project(x))                               # (B, h, T, d_k)
        v = self.heads(self.v_project(x))                               # (B, h, T, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)          # (B, h, T, T)
        if attn_mask is None:
            w = torch.softmax(scores, dim=-1)
        else:
            allowed = attn_mask.bool().unsqueeze(1).expand_as(scores)   # (B, h, T, T)
            w = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        w = self.dropout(w)
        return self.o_project((w @ v).reshape(B, T, d_model))
