# lesson: 02_masking
# expect: wrong scaled_dot_product_attention masked-row-leak
# The seed documents' masked_fill(mask == 0, -1e9), written in NumPy.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(np.asarray(mask) == 0, -1e9, scores)
    w = softmax(scores)
    return w @ v, w
