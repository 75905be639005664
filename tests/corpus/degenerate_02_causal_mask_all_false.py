# lesson: 02_masking
# source: tests/degenerate.py (all-false): an answer that does nothing; it must score 0
# expect: wrong causal_mask -
# %% causal_mask
def causal_mask(seq_len):
    return np.zeros((seq_len, seq_len), dtype=bool)
