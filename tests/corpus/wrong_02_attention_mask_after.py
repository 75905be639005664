# lesson: 02_masking
# expect: wrong scaled_dot_product_attention mask-after-softmax
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    w = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    if mask is not None:
        w = w * mask
    return w @ v, w
