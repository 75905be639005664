# lesson: 02_masking
# expect: wrong scaled_dot_product_attention masked-row-leak wrong-scale
# -1e9 fill, / d_k.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1]          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        scores = np.where(mask, scores, -1e9)
        w = softmax(scores)
    return w @ v, w
