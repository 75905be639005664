# lesson: 02_masking
# expect: wrong causal_mask causal-off-by-one
# %% causal_mask
def causal_mask(seq_len):
    i = np.arange(seq_len)
    return i[None, :] <= i[:, None] + 1
