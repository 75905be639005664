# lesson: 05_multi_head_attention
# expect: wrong merge_heads wrong-shape
# %% merge_heads
def merge_heads(x):
    return x.transpose(1, 2)            # (B, T, h, d_k): the heads are never concatenated
