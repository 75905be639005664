# lesson: 08_fast_attention
# source: kanishkez/Paper-implementations kvcache.py d660ac9148f7d0eba720fb5051115cf569c3141c
# adapted: the script's loop body (one token per step, cached_k/cached_v grown with torch.cat) as the forward of
# adapted: the contract's module (q_proj, k_proj, v_proj, out_proj -> w_q, w_k, w_v, w_o), taking T tokens and
# adapted: the cache; grouped-query attention added (num_kv_heads, repeat_interleave).
# bug report: no causal mask at all: written for one token per step, where none is needed, it lets every token
# bug report: read the tokens after it as soon as several come at once.
# expect: wrong CausalSelfAttention causal-mask-missing
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        # adapted: GQA (num_kv_heads, w_k/w_v of num_kv_heads * head_dim features, repeat_interleave below)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError("num_heads must divide d_model, and num_kv_heads must divide num_heads")
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, num_kv_heads * (d_model // num_heads))
        self.w_v = nn.Linear(d_model, num_kv_heads * (d_model // num_heads))
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        q = self.w_q(x)
        k = self.w_k(x)
        v = self.w_v(x)

        B, T, D = q.shape
        num_heads = self.num_heads
        head_dim = D // num_heads

        q = q.view(B, T, num_heads, head_dim).transpose(1, 2)
        k = k.view(B, T, self.num_kv_heads, head_dim).transpose(1, 2)
        v = v.view(B, T, self.num_kv_heads, head_dim).transpose(1, 2)

        if cache is None:
            cached_k = k
            cached_v = v
        else:
            cached_k = torch.cat([cache[0], k], dim=2)
            cached_v = torch.cat([cache[1], v], dim=2)

        n_rep = num_heads // self.num_kv_heads
        keys, values = cached_k.repeat_interleave(n_rep, dim=1), cached_v.repeat_interleave(n_rep, dim=1)
        attn_scores = torch.matmul(q, keys.transpose(-2, -1)) / (head_dim ** 0.5)
        attn_probs = F.softmax(attn_scores, dim=-1)
        out = torch.matmul(attn_probs, values)

        out = out.transpose(1, 2).contiguous().view(B, T, D)
        output = self.w_o(out)
        return output, (cached_k, cached_v)
