# lesson: 05_multi_head_attention
# expect: correct
# One head at a time, slicing each projection's output; torch.cat to merge.
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"{d_model} is not divisible by {num_heads}")
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        d = query.shape[-1] // self.h
        Q, K, V = self.w_q(query), self.w_k(key), self.w_v(value)
        ok = None
        if mask is not None:
            ok = torch.as_tensor(mask).bool().expand(query.shape[0], self.h, query.shape[1], key.shape[1])
        heads = []
        for i in range(self.h):
            q, k, v = (t[..., i * d:(i + 1) * d] for t in (Q, K, V))
            s = q @ k.transpose(1, 2) / math.sqrt(d)
            if ok is not None:
                s = s.masked_fill(~ok[:, i], float("-inf"))
            w = torch.softmax(s, dim=-1)
            w = torch.where(torch.isnan(w), 0.0, w)
            heads.append(self.dropout(w) @ v)
        return self.w_o(torch.cat(heads, dim=-1))
