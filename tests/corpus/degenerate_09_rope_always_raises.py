# lesson: 09_generating_text
# expect: wrong apply_rope -
# degenerate: raises ValueError whatever it is given.
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    raise ValueError("d must be even")
