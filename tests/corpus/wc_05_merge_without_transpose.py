# lesson: 05_multi_head_attention
# expect: wrong MultiHeadAttention heads-mixed
# Student audit (session 9): the heads are split right, then merged with a plain reshape. The
# feedback once said its clause twice and explained and fixed the split.
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by num_heads={num_heads}")
        self.d_model, self.h, self.d_k = d_model, num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        B, Lq, _ = query.shape
        Lk = key.shape[1]
        q = self.w_q(query).view(B, Lq, self.h, self.d_k).transpose(1, 2)
        k = self.w_k(key).view(B, Lk, self.h, self.d_k).transpose(1, 2)
        v = self.w_v(value).view(B, Lk, self.h, self.d_k).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        weights = torch.nan_to_num(weights, nan=0.0)
        weights = self.dropout(weights)
        out = weights @ v                          # (B, h, Lq, d_k)
        out = out.reshape(B, Lq, self.d_model)     # forgot to transpose heads back
        return self.w_o(out)
