# lesson: 08_fast_attention
# expect: wrong repeat_kv kv-repeat-order
# expect: full CausalSelfAttention
# The reference's CausalSelfAttention (the solution's cell) beside a repeat_kv that tiles the heads: the
# attention calls repeat_kv and is graded with the reference repeat_kv in place of the wrong one (issue 32;
# a developer saw 4/10 for it).
# %% repeat_kv
def repeat_kv(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)
# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    """Causal multi-head self-attention with a KV cache and grouped-query attention.

    Args:
        d_model: model width; num_heads must divide it (else ValueError).
        num_heads: number of query heads h; d_k = d_model // h.
        num_kv_heads: number of key/value heads h_kv (default h); must divide h (else ValueError).
            h_kv == h is ordinary multi-head attention, h_kv == 1 is multi-query attention.

    Attributes:
        w_q, w_o: nn.Linear(d_model, d_model); w_k, w_v: nn.Linear(d_model, h_kv * d_k); all with bias.

    forward(x, cache=None):
        x: (B, T, d_model), the T new tokens.
        cache: None or a tuple (k, v), each (B, h_kv, T_past, d_k): the keys and values of the
            T_past tokens before x.
        Returns (output, (k, v)): output (B, T, d_model), in which new token i attends to the
        cached tokens and to new tokens 0..i; k and v (B, h_kv, T_past + T, d_k), the cache with
        the new keys and values appended.
    """

    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        if num_heads % num_kv_heads != 0:
            raise ValueError(f"num_heads ({num_heads}) must be divisible by num_kv_heads ({num_kv_heads})")
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_k)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x, cache=None):
        B, T, d_model = x.shape
        q = self.w_q(x).view(B, T, self.num_heads, self.d_k).transpose(1, 2)       # (B, h, T, d_k)
        k = self.w_k(x).view(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)    # (B, h_kv, T, d_k)
        v = self.w_v(x).view(B, T, self.num_kv_heads, self.d_k).transpose(1, 2)    # (B, h_kv, T, d_k)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)                                     # (B, h_kv, T_past + T, d_k)
            v = torch.cat([cache[1], v], dim=2)
        past = k.shape[2] - T
        # new token i sits at absolute position past + i: it may read keys 0 .. past + i
        allowed = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(past)   # (T, T_past + T)
        n_rep = self.num_heads // self.num_kv_heads
        scores = q @ repeat_kv(k, n_rep).transpose(-2, -1) / math.sqrt(self.d_k)  # (B, h, T, T_past + T)
        weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
        out = (weights @ repeat_kv(v, n_rep)).transpose(1, 2).reshape(B, T, d_model)   # (B, T, d_model)
        return self.w_o(out), (k, v)
