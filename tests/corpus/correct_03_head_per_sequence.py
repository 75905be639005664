# lesson: 03_self_attention_head
# expect: correct
# Attends one sequence of the batch at a time.
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k)
        self.w_k = nn.Linear(d_model, d_k)
        self.w_v = nn.Linear(d_model, d_k)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        full = None if mask is None else torch.as_tensor(mask).bool().expand(B, T, T)
        outs = []
        for b in range(B):
            q, k, v = self.w_q(x[b]), self.w_k(x[b]), self.w_v(x[b])
            s = q @ k.T / math.sqrt(k.shape[-1])
            if full is not None:
                s = s.masked_fill(~full[b], float("-inf"))
            w = torch.softmax(s, dim=-1)
            outs.append(torch.nan_to_num(w, nan=0.0) @ v)
        return torch.stack(outs)
