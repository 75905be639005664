# lesson: 08_fast_attention
# source: openai/whisper whisper/model.py 0060c61428cc2f432b346c803e405f1cd7fbfc87
# adapted: MultiHeadAttention's self-attention path (query, key, value, out -> w_q, w_k, w_v, w_o; Whisper's key
# adapted: projection has no bias, here it has, as the contract's) with the kv_cache of its forward hooks (the
# adapted: keys and values of every token so far, concatenated along time) passed in and returned as the tuple
# adapted: the contract asks for; the decoder's mask buffer (-inf above the diagonal) built in the module;
# adapted: grouped-query attention added (num_kv_heads, repeat_interleave).
# bug report: qkv_attention adds mask[:n_ctx, :n_ctx] with n_ctx the number of NEW tokens: right without a cache
# bug report: and for one token at a time (a (1, 1) mask of 0), but several new tokens after a cache meet a
# bug report: (T, T) mask for (T, T_past + T) scores, which raises.
# expect: wrong CausalSelfAttention -
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        # adapted: GQA (num_kv_heads, w_k/w_v of num_kv_heads * head_dim features, repeat_interleave below)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError("num_heads must divide d_model, and num_kv_heads must divide num_heads")
        self.n_head, self.n_kv_head = num_heads, num_kv_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, num_kv_heads * (d_model // num_heads))
        self.w_v = nn.Linear(d_model, num_kv_heads * (d_model // num_heads))
        self.w_o = nn.Linear(d_model, d_model)
        mask = torch.empty(64, 64).fill_(-np.inf).triu_(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x, cache=None):
        q = self.w_q(x)
        k = self.w_k(x)
        v = self.w_v(x)
        B, T, _ = k.shape
        k = k.view(B, T, self.n_kv_head, -1).transpose(1, 2)
        v = v.view(B, T, self.n_kv_head, -1).transpose(1, 2)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        wv = self.qkv_attention(q, k, v, self.mask)
        return self.w_o(wv), (k, v)

    def qkv_attention(self, q, k, v, mask=None):
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        n_rep = self.n_head // self.n_kv_head
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.repeat_interleave(n_rep, dim=1).transpose(-2, -1) * scale
        v = v.repeat_interleave(n_rep, dim=1)

        qk = q @ k
        if mask is not None:
            qk = qk + mask[:n_ctx, :n_ctx]

        w = F.softmax(qk.float(), dim=-1).to(q.dtype)
        return (w @ v).permute(0, 2, 1, 3).flatten(start_dim=2)
