# lesson: 09_generating_text
# source: vllm-project/vllm vllm/model_executor/layers/rotary_embedding.py 5570cce30a405985174fdefdb64f9f1597aef7c3  (https://github.com/vllm-project/vllm/blob/5570cce30a405985174fdefdb64f9f1597aef7c3/vllm/model_executor/layers/rotary_embedding.py)
# licence: Apache-2.0
# bug report: none
# adapted: RotaryEmbedding._compute_inv_freq, _compute_cos_sin_cache and forward_native with
#   _apply_rotary_emb_torch for one tensor x of shape (..., T, d) (rotary_dim = head_size = d, is_neox_style=True,
#   the dtype of the table float32, max_position_embeddings = the largest position + 1); the (T, d/2) cos and
#   sin broadcast over x's leading axes instead of unsqueeze(-2) for (T, heads, d); added: the contract's
#   ValueError for an odd d. Real behaviour kept: the neox (rotate-half) layout, a float32 table cast to x's dtype.
# expect: correct
# %% apply_rope
def _apply_rotary_emb_torch(x, cos, sin, is_neox_style):
    cos = cos.to(x.dtype)
    sin = sin.to(x.dtype)
    if is_neox_style:
        x1, x2 = torch.chunk(x, 2, dim=-1)
    else:
        x1 = x[..., ::2]
        x2 = x[..., 1::2]
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if is_neox_style:
        return torch.cat((o1, o2), dim=-1)
    else:
        return torch.stack((o1, o2), dim=-1).flatten(-2)


def apply_rope(x, positions, base=10000.0):
    rotary_dim = x.shape[-1]
    if rotary_dim % 2:
        raise ValueError("the number of features must be even")
    inv_freq = 1.0 / (base**(torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
    positions = torch.as_tensor(positions).flatten()
    t = torch.arange(int(positions.max()) + 1, dtype=torch.float)
    freqs = torch.einsum("i,j -> ij", t, inv_freq)
    cos_sin_cache = torch.cat((freqs.cos(), freqs.sin()), dim=-1)
    cos_sin = cos_sin_cache.index_select(0, positions)
    cos, sin = cos_sin.chunk(2, dim=-1)
    return _apply_rotary_emb_torch(x, cos, sin, True)
