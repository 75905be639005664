# lesson: 05_multi_head_attention
# expect: wrong merge_heads heads-mixed
# %% merge_heads
def merge_heads(x):
    B, h, T, d = x.shape
    return x.reshape(B, T, h * d)
