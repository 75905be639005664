# lesson: 08_fast_attention
# expect: wrong CausalSelfAttention cache-causal-offset
# Whisper's pattern (openai/whisper whisper/model.py, `mask[:n_ctx, :n_ctx]`): one new token reads every
# key, several new tokens after a cache get the top-left corner of the full causal mask.
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        self.h = num_heads
        self.h_kv = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % self.h or self.h % self.h_kv:
            raise ValueError("num_heads must divide d_model, and num_kv_heads must divide num_heads")
        self.d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, self.h_kv * self.d_k)
        self.w_v = nn.Linear(d_model, self.h_kv * self.d_k)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, D = x.shape
        q = self.w_q(x).view(B, T, self.h, self.d_k).transpose(1, 2)
        k_new = self.w_k(x).view(B, T, self.h_kv, self.d_k).transpose(1, 2)
        v_new = self.w_v(x).view(B, T, self.h_kv, self.d_k).transpose(1, 2)
        if cache is None:
            k, v = k_new, v_new
        else:
            k, v = torch.cat([cache[0], k_new], dim=2), torch.cat([cache[1], v_new], dim=2)
        full = torch.ones(64, 64, dtype=torch.bool).tril()
        mask = full[:T, :k.shape[2]] if T > 1 else torch.ones(1, k.shape[2], dtype=torch.bool)
        n = self.h // self.h_kv
        k_all, v_all = k.repeat_interleave(n, dim=1), v.repeat_interleave(n, dim=1)
        scores = q @ k_all.transpose(-2, -1) / math.sqrt(self.d_k)
        scores = scores.masked_fill(~mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v_all
        return self.w_o(out.transpose(1, 2).reshape(B, T, D)), (k, v)
