# lesson: 05_multi_head_attention
# expect: correct
# split/merge with unflatten/permute/flatten, and F.dropout with training=self.training.
# %% split_heads
def split_heads(x, num_heads):
    return x.unflatten(-1, (num_heads, -1)).permute(0, 2, 1, 3)
# %% merge_heads
def merge_heads(x):
    return x.permute(0, 2, 1, 3).flatten(-2)
# %% MultiHeadAttention
import torch.nn.functional as F

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads")
        self.num_heads, self.p = num_heads, dropout
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.w_q(query), self.num_heads)
        k = split_heads(self.w_k(key), self.num_heads)
        v = split_heads(self.w_v(value), self.num_heads)
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / q.shape[-1] ** 0.5
        if mask is not None:
            ok = torch.as_tensor(mask) != 0
            s = torch.where(ok, s, float("-inf"))
            w = torch.nan_to_num(s.softmax(-1), nan=0.0)
        else:
            w = s.softmax(-1)
        w = F.dropout(w, self.p, training=self.training)
        return self.w_o(merge_heads(w @ v))
