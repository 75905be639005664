# lesson: 01_scaled_dot_product_attention
# expect: wrong scaled_dot_product_attention -
# Matches no catalogued mistake: the weights are exp(scores), never normalised.
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(-1, keepdims=True))
    return w @ v, w
