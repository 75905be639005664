# lesson: 05_multi_head_attention
# expect: correct
# Heads folded into the batch for torch.bmm, like the seed's second implementation (with the mask fixed).
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        self.h, self.hd = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        N, Lq, D = query.shape
        Lk = key.shape[1]
        fold = lambda t, L: t.view(N, L, self.h, self.hd).transpose(1, 2).reshape(N * self.h, L, self.hd)
        q, k, v = fold(self.w_q(query), Lq), fold(self.w_k(key), Lk), fold(self.w_v(value), Lk)
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.hd)           # (N*h, Lq, Lk)
        if mask is not None:
            ok = torch.as_tensor(mask).bool().expand(N, self.h, Lq, Lk).reshape(N * self.h, Lq, Lk)
            s = s.masked_fill(~ok, -1e9)
            w = torch.softmax(s, dim=-1) * ok.any(-1, keepdim=True)
        else:
            w = torch.softmax(s, dim=-1)
        ctx = torch.bmm(self.dropout(w), v).view(N, self.h, Lq, self.hd)
        return self.w_o(ctx.transpose(1, 2).contiguous().view(N, Lq, D))
