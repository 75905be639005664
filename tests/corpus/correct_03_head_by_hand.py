# lesson: 03_self_attention_head
# expect: correct
# Calls the nn.Linear weights by hand (x @ W.T + b) and uses -inf with torch.where for blocked rows.
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k)
        self.w_k = nn.Linear(d_model, d_k)
        self.w_v = nn.Linear(d_model, d_k)

    def forward(self, x, mask=None):
        q = x @ self.w_q.weight.T + self.w_q.bias
        k = x @ self.w_k.weight.T + self.w_k.bias
        v = x @ self.w_v.weight.T + self.w_v.bias
        s = torch.einsum("btd,bsd->bts", q, k) * q.shape[-1] ** -0.5
        if mask is None:
            return torch.softmax(s, dim=-1) @ v
        ok = torch.as_tensor(mask) != 0
        s = torch.where(ok, s, torch.tensor(float("-inf")))
        w = torch.softmax(s, dim=-1)
        w = torch.where(torch.isnan(w), torch.zeros_like(w), w)
        return w @ v
