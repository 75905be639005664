# lesson: 05_multi_head_attention
# expect: wrong MultiHeadAttention heads-mixed
# w05-style: the split is a plain view to (B, h, L, d_k) without the transpose, the merge is right.
# %% MultiHeadAttention
def sp(t, h):
    B, T, D = t.shape
    return t.view(B, T, h, D // h).transpose(1, 2)

def mg(t):
    B, h, T, d = t.shape
    return t.transpose(1, 2).reshape(B, T, h * d)

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("d_model must be divisible by num_heads")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.drop = nn.Dropout(dropout)

    def attend(self, q, k, v, mask, scale):
        s = q @ k.transpose(-2, -1) / scale
        if mask is not None:
            ok = torch.as_tensor(mask).bool().expand_as(s)
            rows = ok.any(-1, keepdim=True)
            s = s.masked_fill(~ok, float("-inf")).masked_fill(~rows, 0.0)
            return self.drop(torch.softmax(s, -1).masked_fill(~rows, 0.0)) @ v
        return self.drop(torch.softmax(s, -1)) @ v

    def forward(self, query, key, value, mask=None):
        B, Lq, D = query.shape
        q = self.w_q(query).view(B, self.h, Lq, self.d_k)
        k = self.w_k(key).view(B, self.h, key.shape[1], self.d_k)
        v = self.w_v(value).view(B, self.h, value.shape[1], self.d_k)
        return self.w_o(mg(self.attend(q, k, v, mask, math.sqrt(self.d_k))))
