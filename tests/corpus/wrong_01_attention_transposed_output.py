# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention wrong-shape
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    return np.swapaxes(w @ v, -1, -2), w          # output transposed: (..., d_v, Lq)
