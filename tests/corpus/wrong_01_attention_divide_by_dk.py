# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention wrong-scale
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    weights = softmax(q @ np.swapaxes(k, -1, -2) / q.shape[-1])
    return weights @ v, weights
