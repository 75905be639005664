# lesson: 02_masking
# expect: wrong scaled_dot_product_attention missing-scale
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2)
    if mask is None:
        w = softmax(scores)
        return w @ v, w
    allowed = np.broadcast_to(np.asarray(mask).astype(bool), scores.shape)
    ok = allowed.any(-1, keepdims=True)
    w = np.where(ok, softmax(np.where(ok, np.where(allowed, scores, -np.inf), 0.0)), 0.0)
    return w @ v, w
