# lesson: 09_generating_text
# source: EleutherAI/gpt-neox megatron/model/positional_embeddings.py b0b561f91becfe3137a34599025242647d8e7f3b  (https://github.com/EleutherAI/gpt-neox/blob/b0b561f91becfe3137a34599025242647d8e7f3b/megatron/model/positional_embeddings.py)
# bug report: none
# adapted: RotaryEmbedding(dim, base).forward(x, seq_len) as a function of (dim, seq_len, base), fp32 (the half /
#   bfloat16 precision branches dropped), cos/sin kept (seq_len, dim) instead of [:, None, None, :] (x is (..., T, d));
#   apply_rotary_pos_emb's offset slice cos[offset : T + offset] -> cos[positions] (absolute positions, not
#   necessarily consecutive); one tensor x instead of (q, k); added: the contract's ValueError for an odd d.
# expect: correct
# %% apply_rope
def rotary_cos_sin(dim, seq_len, base):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    t = torch.arange(seq_len).type_as(inv_freq)
    freqs = torch.einsum("i,j->ij", t, inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat(
        (-x2, x1), dim=x1.ndim - 1
    )  # dim=-1 triggers a bug in earlier torch versions


def apply_rope(x, positions, base=10000.0):
    if x.shape[-1] % 2:
        raise ValueError("rotary embeddings need an even head size")
    cos, sin = rotary_cos_sin(x.shape[-1], int(positions.max()) + 1, base)
    cos, sin = cos[positions], sin[positions]
    return (x * cos) + (rotate_half(x) * sin)
