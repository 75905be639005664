# lesson: 09_generating_text
# expect: wrong apply_rope rope-interleaved
# Pairs (2i, 2i + 1), the GPT-J layout.
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd d")
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = positions.double()[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2)
