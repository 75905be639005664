# lesson: 08_fast_attention
# source: tests/degenerate.py (zeros-with-cache): an answer that does nothing; it must score 0
# expect: wrong CausalSelfAttention -
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        num_kv_heads = num_kv_heads or num_heads
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError("bad head counts")
        self.h, self.h_kv, self.d_k = num_heads, num_kv_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        k = self.w_k(x).view(B, T, self.h_kv, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(B, T, self.h_kv, self.d_k).transpose(1, 2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        return torch.zeros_like(x), (k, v)
