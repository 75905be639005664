# lesson: 09_generating_text
# expect: wrong apply_rope rope-wrong-frequency
# theta_i = base^(-i/d): the pair index where 2i belongs.
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    if d % 2:
        raise ValueError("odd d")
    inv = base ** (-torch.arange(d // 2, dtype=torch.float64) / d)
    ang = positions.double()[:, None] * inv
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
