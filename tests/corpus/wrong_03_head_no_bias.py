# lesson: 03_self_attention_head
# expect: wrong SelfAttentionHead -
# Matches no catalogued mistake: the projections have no bias.
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_k, bias=False)

    def forward(self, x, mask=None):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return torch.softmax(s, -1) @ v
