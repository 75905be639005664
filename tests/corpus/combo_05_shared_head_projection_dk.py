# lesson: 05_multi_head_attention
# expect: wrong MultiHeadAttention wrong-scale -
# Scores divided by d_k; also, not catalogued: w_q, w_k, w_v are one Linear(d_k, d_k) without bias shared by
#   every head and applied after the split (a layout seen in published tutorials).
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(self.d_k, self.d_k, bias=False)
        self.w_k = nn.Linear(self.d_k, self.d_k, bias=False)
        self.w_v = nn.Linear(self.d_k, self.d_k, bias=False)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        B, Lq, D = query.shape
        Lk = key.shape[1]
        q = self.w_q(query.view(B, Lq, self.h, self.d_k)).transpose(1, 2)   # (B, h, Lq, d_k)
        k = self.w_k(key.view(B, Lk, self.h, self.d_k)).transpose(1, 2)     # (B, h, Lk, d_k)
        v = self.w_v(value.view(B, Lk, self.h, self.d_k)).transpose(1, 2)   # (B, h, Lk, d_k)
        s = q @ k.transpose(-2, -1) / self.d_k                               # (B, h, Lq, Lk)
        if mask is not None:
            allowed = torch.as_tensor(mask).bool()
            s = s.masked_fill(~allowed, float("-inf"))
            w = torch.softmax(s, dim=-1).masked_fill(~allowed.any(-1, keepdim=True), 0.0)
        else:
            w = torch.softmax(s, dim=-1)
        w = self.dropout(w)
        return self.w_o((w @ v).transpose(1, 2).reshape(B, Lq, D))
