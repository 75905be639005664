# lesson: 05_multi_head_attention
# expect: wrong MultiHeadAttention softmax-wrong-axis wrong-scale
# nn.Softmax() with no dim normalises over the heads; the scores are divided by sqrt(d_model).
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.d_k, self.p = num_heads, d_model // num_heads, dropout
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.softmax = nn.Softmax()   # no dim: PyTorch picks dim 1 of a 4-D tensor, the heads

    def split(self, t):
        B, L, _ = t.shape
        return t.view(B, L, self.h, self.d_k).transpose(1, 2)

    def merge(self, t):
        B, _, L, _ = t.shape
        return t.transpose(1, 2).reshape(B, L, self.h * self.d_k)

    def forward(self, query, key, value, mask=None):
        q = self.split(self.w_q(query))                      # (B, h, Lq, d_k)
        k = self.split(self.w_k(key))                        # (B, h, Lk, d_k)
        v = self.split(self.w_v(value))                      # (B, h, Lk, d_k)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.h * self.d_k)   # (B, h, Lq, Lk)
        if mask is None:
            w = self.softmax(s)
        else:
            s = s.masked_fill(torch.as_tensor(mask) == 0, float("-inf"))
            w = torch.nan_to_num(self.softmax(s), nan=0.0)
        w = self.dropout(w)
        concat = self.merge(w @ v)                           # (B, Lq, d_model)
        return self.w_o(concat)
