# lesson: 08_fast_attention
# expect: wrong CausalSelfAttention cache-causal-offset
# source: karpathy/nanoGPT model.py 04a1d697ddc57aadb2edbe95816bf86c6b8918b0
# adapted: nanoGPT's CausalSelfAttention (packed c_attn split into the contract's w_q/w_k/w_v, c_proj renamed
# adapted: w_o, no dropout) with a KV cache bolted on: the cached keys and values are concatenated in front,
# adapted: but scaled_dot_product_attention is still called with is_causal=True, whose mask is aligned to
# adapted: the top-left corner: with a cache, new token i sees keys 0..i only, not the cache before it.
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):

    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        assert d_model % num_heads == 0
        if num_kv_heads is not None and num_kv_heads != num_heads:
            if num_heads % num_kv_heads:
                raise ValueError("num_kv_heads must divide num_heads")
        self.n_head = num_heads
        self.n_kv = num_kv_heads or num_heads
        self.n_embd = d_model
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        hs = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, self.n_kv * hs)
        self.w_v = nn.Linear(d_model, self.n_kv * hs)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, C = x.size()
        hs = C // self.n_head
        q = self.w_q(x).view(B, T, self.n_head, hs).transpose(1, 2)
        k = self.w_k(x).view(B, T, self.n_kv, hs).transpose(1, 2)
        v = self.w_v(x).view(B, T, self.n_kv, hs).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        rep = self.n_head // self.n_kv
        y = torch.nn.functional.scaled_dot_product_attention(
            q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1), attn_mask=None, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.w_o(y), (k, v)
