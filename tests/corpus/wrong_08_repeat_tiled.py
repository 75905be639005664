# lesson: 08_fast_attention
# expect: wrong repeat_kv kv-repeat-order
# Tensor.repeat tiles the heads: 0 1 0 1 instead of 0 0 1 1.
# %% repeat_kv
def repeat_kv(x, n_rep):
    return x.repeat(1, n_rep, 1, 1)
