# lesson: 08_fast_attention
# source: tests/degenerate.py (constant): an answer that does nothing; it must score 0
# expect: wrong repeat_kv -
# %% repeat_kv
def repeat_kv(x, n_rep):
    B, h, T, d = x.shape
    return torch.ones(B, h * n_rep, T, d)
