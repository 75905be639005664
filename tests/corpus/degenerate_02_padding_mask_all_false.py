# lesson: 02_masking
# source: tests/degenerate.py (all-false): an answer that does nothing; it must score 0
# expect: wrong padding_mask -
# %% padding_mask
def padding_mask(lengths, max_len):
    return np.zeros((len(lengths), 1, max_len), dtype=bool)
