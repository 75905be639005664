# lesson: 09_generating_text
# expect: wrong apply_rope rope-positions-ignored
# The angles come from arange(T), not from positions: right without a cache, wrong with one.
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    if d % 2:
        raise ValueError("odd d")
    inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
