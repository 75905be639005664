# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention -
# Matches no catalogued mistake: the output is shifted by a small constant.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    w = e / e.sum(-1, keepdims=True)
    return w @ v + 1e-3, w
