# lesson: 01_scaled_dot_product_attention
# source: tests/degenerate.py (uniform): an answer that does nothing; it must score 0
# expect: wrong scaled_dot_product_attention -
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    weights = np.full(lead + (q.shape[-2], k.shape[-2]), 1.0 / k.shape[-2])
    return np.zeros(lead + (q.shape[-2], v.shape[-1])), weights
