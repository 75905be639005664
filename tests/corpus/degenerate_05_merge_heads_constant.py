# lesson: 05_multi_head_attention
# source: tests/degenerate.py (constant): an answer that does nothing; it must score 0
# expect: wrong merge_heads -
# %% merge_heads
def merge_heads(x):
    B, h, T, d = x.shape
    return torch.ones(B, T, h * d)
