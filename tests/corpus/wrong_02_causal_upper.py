# lesson: 02_masking
# expect: wrong causal_mask causal-transposed
# %% causal_mask
def causal_mask(seq_len):
    return np.triu(np.ones((seq_len, seq_len), dtype=bool))
