# lesson: 09_generating_text
# source: huggingface/transformers src/transformers/models/gptj/modeling_gptj.py cb6cd7e984c1482cfcf62aeb3b2921bfeca71e95  (https://github.com/huggingface/transformers/blob/cb6cd7e984c1482cfcf62aeb3b2921bfeca71e95/src/transformers/models/gptj/modeling_gptj.py)
# bug report: none (GPT-J's own layout, as its checkpoints expect)
# adapted: create_sinusoidal_positions(num_pos, dim) with 10000 -> base and num_pos = max(positions) + 1, rows
#   gathered at `positions` (GPTJAttention.forward's gather on position_ids); x[:, :, :, ::2] -> x[..., ::2]
#   (any number of leading axes); sin[:, :, None, :] -> sin (x is (..., T, d), no head axis to insert).
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def create_sinusoidal_positions(num_pos, dim, base):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64) / dim))
    sinusoid_inp = torch.einsum("i , j -> i j", torch.arange(num_pos, dtype=torch.int64).float(), inv_freq).float()
    return torch.cat((torch.sin(sinusoid_inp), torch.cos(sinusoid_inp)), dim=1)


def rotate_every_two(x):
    x1 = x[..., ::2]
    x2 = x[..., 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)  # in einsum notation: rearrange(x, '... d j -> ... (d j)')


def apply_rope(x, positions, base=10000.0):
    embed_positions = create_sinusoidal_positions(int(positions.max()) + 1, x.shape[-1], base)
    sincos = embed_positions[positions]
    sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    sin = torch.repeat_interleave(sin, 2, -1)
    cos = torch.repeat_interleave(cos, 2, -1)
    return (x * cos) + (rotate_every_two(x) * sin)
