# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention batched-transpose
# Walkthrough: k.T reverses every axis of a batched array.
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.T / np.sqrt(q.shape[-1])          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        allowed = np.asarray(mask).astype(bool)
        scores = np.where(allowed, scores, -np.inf)
        w = softmax(scores)
        w = np.where(np.broadcast_to(allowed, scores.shape).any(-1, keepdims=True), w, 0.0)
    return w @ v, w
