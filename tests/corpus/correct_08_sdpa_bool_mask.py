# lesson: 08_fast_attention
# expect: correct
# F.scaled_dot_product_attention with a boolean mask (for SDPA, True = takes part, as in the course)
# built from absolute positions, and repeat_interleave for the heads.
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        kv = num_kv_heads or num_heads
        if d_model % num_heads != 0 or num_heads % kv != 0:
            raise ValueError(f"bad head counts: d_model={d_model}, num_heads={num_heads}, num_kv_heads={kv}")
        self.h, self.kv, self.d = num_heads, kv, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, kv * self.d)
        self.w_v = nn.Linear(d_model, kv * self.d)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        q = self.w_q(x).unflatten(-1, (self.h, self.d)).transpose(1, 2)
        k = self.w_k(x).unflatten(-1, (self.kv, self.d)).transpose(1, 2)
        v = self.w_v(x).unflatten(-1, (self.kv, self.d)).transpose(1, 2)
        if cache is not None:
            k, v = torch.cat((cache[0], k), 2), torch.cat((cache[1], v), 2)
        S = k.shape[2]
        pos_q = torch.arange(S - T, S)[:, None]
        keep = torch.arange(S)[None, :] <= pos_q
        r = self.h // self.kv
        y = F.scaled_dot_product_attention(q, k.repeat_interleave(r, 1), v.repeat_interleave(r, 1), attn_mask=keep)
        return self.w_o(y.transpose(1, 2).flatten(2)), (k, v)
