# lesson: 08_fast_attention
# source: taesiri/MLBites db/kv_cache_attention_pytorch/solution.py 3afef6b94031c414a0b3bbe7abbea457215ae296
# adapted: CachedMultiheadAttention -> CausalSelfAttention (embed_dim -> d_model); its fused qkv_proj split into
# adapted: the contract's w_q, w_k, w_v (same computation), out_proj -> w_o; kv_cache -> cache; grouped-query
# adapted: attention added (the original is MHA only): the num_kv_heads argument, and the cached keys and values
# adapted: repeated with repeat_interleave before the scores.
# expect: correct
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        # adapted: GQA (num_kv_heads, w_k/w_v of num_kv_heads * head_dim features, repeat_interleave below)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError("num_heads must divide d_model, and num_kv_heads must divide num_heads")
        self.embed_dim = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.head_dim = d_model // num_heads
        self.scale = self.head_dim**-0.5
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.head_dim)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, E = x.shape
        q = self.w_q(x).reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.w_k(x).reshape(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.w_v(x).reshape(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)

        # Concatenate with cached K, V if available
        if cache is not None:
            cached_k, cached_v = cache
            k = torch.cat([cached_k, k], dim=2)  # (B, num_heads, S+T, head_dim)
            v = torch.cat([cached_v, v], dim=2)

        # Update cache with new K, V
        new_cache = (k, v)
        n_rep = self.num_heads // self.num_kv_heads
        k, v = k.repeat_interleave(n_rep, dim=1), v.repeat_interleave(n_rep, dim=1)

        scores = q @ k.transpose(-2, -1)  # (B, num_heads, T, S+T)
        scores = scores * self.scale

        # Query i (abs pos cache_len + i) can see keys 0..(cache_len + i)
        total_len = k.size(2)  # S + T
        cache_len = total_len - T  # S
        query_pos = torch.arange(T, device=x.device).unsqueeze(1) + cache_len  # (T, 1)
        key_pos = torch.arange(total_len, device=x.device).unsqueeze(0)  # (1, S+T)
        causal_mask = key_pos > query_pos  # (T, S+T), True where should mask
        scores = scores.masked_fill(causal_mask.unsqueeze(0).unsqueeze(0), float("-inf"))

        attn = F.softmax(scores, dim=-1)
        out = attn @ v  # (B, num_heads, T, head_dim)
        out = out.transpose(1, 2).contiguous().view(B, T, E)
        out = self.w_o(out)
        return out, new_cache
