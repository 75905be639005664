# lesson: 10_flash_attention
# source: tests/degenerate.py (zeros): an answer that does nothing; it must score 0
# expect: wrong flash_attention -
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    return np.zeros(q.shape[:-1] + (v.shape[-1],)), np.zeros(q.shape[:-1])
