# lesson: 10_flash_attention
# source: tests/degenerate.py (mean-of-values): an answer that does nothing; it must score 0
# expect: wrong flash_attention -
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    out = np.broadcast_to(v.mean(axis=-2, keepdims=True), q.shape[:-1] + (v.shape[-1],)).copy()
    return out, np.full(q.shape[:-1], np.log(k.shape[-2]))
