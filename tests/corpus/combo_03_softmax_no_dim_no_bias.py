# lesson: 03_self_attention_head
# expect: wrong SelfAttentionHead softmax-wrong-axis -
# nn.Softmax() with no dim normalises a (B, T, T) tensor over dim 0, the batch; also, not catalogued: the
#   projections have no bias (bias=False).
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_k, bias=False)
        self.softmax = nn.Softmax()

    def forward(self, x, mask=None):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)                # (B, T, d_k)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])           # (B, T, T)
        if mask is not None:
            allowed = torch.as_tensor(mask).bool()
            s = s.masked_fill(~allowed, float("-inf"))
            w = torch.nan_to_num(self.softmax(s), nan=0.0)
        else:
            w = self.softmax(s)
        return w @ v                                                   # (B, T, d_k)
