# lesson: 02_masking
# source: tests/degenerate.py (empty): an answer that does nothing; it must score 0
# expect: wrong causal_mask wrong-shape
# %% causal_mask
def causal_mask(seq_len):
    return np.zeros((0, 0), dtype=bool)
