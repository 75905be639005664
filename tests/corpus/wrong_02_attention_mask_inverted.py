# lesson: 02_masking
# expect: wrong scaled_dot_product_attention mask-inverted
# Reads True as "blocked", like nn.MultiheadAttention's attn_mask.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        blocked = np.broadcast_to(np.asarray(mask).astype(bool), scores.shape)
        scores = np.where(blocked, -np.inf, scores)
        ok = (~blocked).any(-1, keepdims=True)
        scores = np.where(ok, scores, 0.0)
        w = np.where(ok, softmax(scores), 0.0)
    else:
        w = softmax(scores)
    return w @ v, w
