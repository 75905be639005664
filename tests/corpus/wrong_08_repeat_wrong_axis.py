# lesson: 08_fast_attention
# expect: wrong repeat_kv kv-repeat-wrong-axis
# repeat_interleave along the time axis instead of the head axis.
# %% repeat_kv
def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, n_rep, dim=2)
