# lesson: 01_scaled_dot_product_attention
# expect: correct
# %% softmax
def softmax(x, axis=-1):
    z = np.exp(x - np.amax(x, axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = np.einsum("...qd,...kd->...qk", q, k) / np.sqrt(k.shape[-1])
    weights = softmax(scores)
    return np.einsum("...qk,...kv->...qv", weights, v), weights
