# lesson: 02_masking
# expect: wrong scaled_dot_product_attention mask-after-softmax wrong-scale
# Mask after softmax, / d_k.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1]          # (..., Lq, Lk)
    if mask is None:
        w = softmax(scores)
    else:
        w = softmax(scores) * mask
    return w @ v, w
