# lesson: 03_self_attention_head
# source: tests/degenerate.py (bias-only): an answer that does nothing; it must score 0
# expect: wrong SelfAttentionHead -
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k)
        self.w_k = nn.Linear(d_model, d_k)
        self.w_v = nn.Linear(d_model, d_k)

    def forward(self, x, mask=None):
        return self.w_v.bias.expand(x.shape[0], x.shape[1], -1).clone()
