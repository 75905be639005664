# lesson: 02_masking
# source: tests/degenerate.py (empty): an answer that does nothing; it must score 0
# expect: wrong padding_mask wrong-shape
# %% padding_mask
def padding_mask(lengths, max_len):
    return np.zeros((0, 1, 0), dtype=bool)
