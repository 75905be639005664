# lesson: 03_self_attention_head
# expect: wrong SelfAttentionHead mask-inverted
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k)
        self.w_k = nn.Linear(d_model, d_k)
        self.w_v = nn.Linear(d_model, d_k)

    def forward(self, x, mask=None):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            blocked = torch.as_tensor(mask).bool().expand_as(s)     # reads True as "blocked"
            s = s.masked_fill(blocked, float("-inf"))
            return torch.nan_to_num(torch.softmax(s, -1), nan=0.0) @ v
        return torch.softmax(s, -1) @ v
