# lesson: 10_flash_attention
# source: tests/degenerate.py (constant): an answer that does nothing; it must score 0
# expect: wrong flash_attention -
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    return np.full(q.shape[:-1] + (v.shape[-1],), 0.5), np.full(q.shape[:-1], 1.0)
