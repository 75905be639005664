# lesson: 05_multi_head_attention
# expect: wrong split_heads heads-mixed
# %% split_heads
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.reshape(B, num_heads, T, D // num_heads)
