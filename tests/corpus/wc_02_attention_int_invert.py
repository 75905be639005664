# lesson: 02_masking
# expect: wrong scaled_dot_product_attention mask-int-invert
# Walkthrough: `~mask` is right for booleans, but ~1 == -2 and ~0 == -1 for a 0/1 int mask.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        scores = np.where(~mask, -np.inf, scores)
        w = np.nan_to_num(softmax(scores), nan=0.0)
    return w @ v, w
