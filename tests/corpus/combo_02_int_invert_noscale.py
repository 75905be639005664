# lesson: 02_masking
# expect: wrong scaled_dot_product_attention mask-int-invert missing-scale
# ~ on an int mask, no scale.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / 1          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        scores = np.where(~mask, -np.inf, scores)
        w = np.nan_to_num(softmax(scores), nan=0.0)
    return w @ v, w
