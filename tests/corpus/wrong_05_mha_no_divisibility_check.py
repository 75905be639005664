# lesson: 05_multi_head_attention
# expect: wrong MultiHeadAttention -
# Never raises ValueError for d_model % num_heads != 0 (it silently drops features).
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
        q, k, v = sp(self.w_q(query), self.h), sp(self.w_k(key), self.h), sp(self.w_v(value), self.h)
        return self.w_o(mg(self.attend(q, k, v, mask, math.sqrt(self.d_k))))
