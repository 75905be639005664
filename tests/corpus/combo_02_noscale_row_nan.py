# lesson: 02_masking
# expect: wrong scaled_dot_product_attention missing-scale masked-row-nan
# No scale, NaN rows.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / 1.0          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        scores = np.where(mask, scores, -np.inf)
        w = softmax(scores)
    return w @ v, w
