# lesson: 08_fast_attention
# source: tests/degenerate.py (returns-input): an answer that does nothing; it must score 0
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
        return x.clone(), cache
