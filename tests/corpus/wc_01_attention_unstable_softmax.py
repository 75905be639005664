# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-unstable
# expect: full scaled_dot_product_attention
# Walkthrough: attention is right but calls the student's own unstable softmax. Since issue 32 the attention is
# graded with the reference softmax in its place (each skill counted once) and keeps its points.
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        allowed = np.asarray(mask).astype(bool)
        scores = np.where(allowed, scores, -np.inf)
        w = softmax(scores)
        w = np.where(np.broadcast_to(allowed, scores.shape).any(-1, keepdims=True), w, 0.0)
    return w @ v, w
