# lesson: 02_masking
# expect: wrong causal_mask causal-off-by-one
# %% causal_mask
def causal_mask(seq_len):
    return np.tril(np.ones((seq_len, seq_len), dtype=bool), k=-1)
