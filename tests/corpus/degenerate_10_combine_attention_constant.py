# lesson: 10_flash_attention
# source: tests/degenerate.py (constant): an answer that does nothing; it must score 0
# expect: wrong combine_attention -
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    return np.full(np.shape(out1), 0.5), np.ones(np.shape(lse1))
