# lesson: 09_generating_text
# expect: correct
# RoPE as complex multiplication on (x_i, x_{i+d/2}) pairs.
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    if d % 2 != 0:
        raise ValueError("apply_rope needs an even feature size")
    theta = base ** (-torch.arange(d // 2, dtype=torch.float64) * 2 / d)
    turn = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64), positions.double()[:, None] * theta)
    z = torch.complex(x[..., : d // 2].double(), x[..., d // 2:].double()) * turn
    return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
