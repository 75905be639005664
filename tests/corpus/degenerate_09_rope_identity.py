# lesson: 09_generating_text
# expect: wrong apply_rope -
# degenerate: returns x unchanged (and never raises).
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    return x.clone()
