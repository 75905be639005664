# lesson: 03_self_attention_head
# expect: wrong SelfAttentionHead wrong-scale
# Walkthrough: scaled by sqrt(d_model) instead of sqrt(d_k).
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
            ok = torch.as_tensor(mask).bool()
            w = torch.softmax(s.masked_fill(~ok, float("-inf")), dim=-1)
            w = torch.where(ok.any(-1, keepdim=True), w, torch.zeros_like(w))
        return w @ v
