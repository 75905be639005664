# lesson: 01_scaled_dot_product_attention
# expect: correct
# softmax through log-sum-exp; attention computed in the inputs' own dtype.
# %% softmax
def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scale = np.asarray(1.0 / np.sqrt(q.shape[-1]), dtype=q.dtype)
    scores = np.matmul(q * scale, np.moveaxis(k, -1, -2))
    weights = softmax(scores, axis=-1)
    return np.matmul(weights, v), weights
