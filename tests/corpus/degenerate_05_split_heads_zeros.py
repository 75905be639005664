# lesson: 05_multi_head_attention
# source: tests/degenerate.py (zeros): an answer that does nothing; it must score 0
# expect: wrong split_heads -
# %% split_heads
def split_heads(x, num_heads):
    B, T, D = x.shape
    return torch.zeros(B, num_heads, T, D // num_heads)
