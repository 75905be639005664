# lesson: 05_multi_head_attention
# expect: wrong MultiHeadAttention mask-misbroadcast
# Heads folded into the batch for torch.bmm; the mask is dropped to (B, Lq, Lk) and tiled with
# .repeat(h, 1, 1), so folded row b*h + i reads mask b*h + i mod B: head i takes sequence i's mask
# when B == h (with B != h it is wrong in another way). The fix is .repeat_interleave(h, dim=0).
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
            ok = torch.as_tensor(mask).bool()
            if ok.dim() == 4:
                ok = ok[:, 0]                                              # (N, Lq or 1, Lk)
            ok = ok.expand(N, Lq, Lk).repeat(self.h, 1, 1)                 # (N*h, Lq, Lk), tiled: wrong order
            s = s.masked_fill(~ok, float("-inf"))
            w = torch.nan_to_num(torch.softmax(s, dim=-1))                 # fully blocked rows: zeros
        else:
            w = torch.softmax(s, dim=-1)
        ctx = torch.bmm(self.dropout(w), v).view(N, self.h, Lq, self.hd)
        return self.w_o(ctx.transpose(1, 2).contiguous().view(N, Lq, D))
