# lesson: 03_self_attention_head
# expect: wrong SelfAttentionHead wrong-scale masked-row-nan
# sqrt(d_model), NaN rows.
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.d_model = d_model
        self.w_q = nn.Linear(d_model, d_k)
        self.w_k = nn.Linear(d_model, d_k)
        self.w_v = nn.Linear(d_model, d_k)

    def forward(self, x, mask=None):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)          # (B, T, d_k)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)                  # (B, T, T)
        if mask is None:
            w = torch.softmax(s, dim=-1)
        else:
            w = torch.softmax(s.masked_fill(torch.as_tensor(mask) == 0, float("-inf")), dim=-1)
        return w @ v
