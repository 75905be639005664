# lesson: 02_masking
# source: tests/degenerate.py (all-true): an answer that does nothing; it must score 0
# expect: wrong causal_mask -
# %% causal_mask
def causal_mask(seq_len):
    return np.ones((seq_len, seq_len), dtype=bool)
