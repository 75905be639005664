# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention wrong-type
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v     # forgets to return the weights
