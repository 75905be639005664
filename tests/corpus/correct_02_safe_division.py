# lesson: 02_masking
# expect: correct
# Masked softmax written out: exp of allowed scores, divided only where the row has an allowed key.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    allowed = np.ones(s.shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask) == 1, s.shape)
    has = allowed.any(axis=-1, keepdims=True)
    top = np.where(has, np.where(allowed, s, -np.inf).max(axis=-1, keepdims=True), 0.0)
    e = np.where(allowed, np.exp(np.where(allowed, s, 0.0) - top), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return w @ v, w
