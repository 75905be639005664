# lesson: 02_masking
# expect: wrong scaled_dot_product_attention masked-row-leak
# An additive -1e9 mask: a fully blocked row keeps its original distribution over blocked keys.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + (1 - np.asarray(mask, dtype=float)) * -1e9
    w = softmax(scores)
    return w @ v, w
