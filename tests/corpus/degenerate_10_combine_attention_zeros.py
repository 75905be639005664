# lesson: 10_flash_attention
# source: tests/degenerate.py (zeros): an answer that does nothing; it must score 0
# expect: wrong combine_attention -
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    return np.zeros_like(out1), np.zeros_like(lse1)
