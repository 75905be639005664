# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention softmax-unstable
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    e = np.exp(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights
