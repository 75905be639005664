# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-unstable
# expect: full scaled_dot_product_attention
# The reference's scaled_dot_product_attention (the solution's cell) beside the softmax of wrong_01_softmax_unstable.py: scaled_dot_product_attention calls
# softmax, and is graded with the reference softmax in place of the wrong one (issue 32).
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    """Scaled dot-product attention, softmax(q k^T / sqrt(d_k)) v, over any leading batch dimensions.

    Args:
        q: queries, shape (..., Lq, d_k).
        k: keys, shape (..., Lk, d_k).
        v: values, shape (..., Lk, d_v).
        mask: not used in this lesson (always None); lesson 2 adds masking.

    Returns:
        (output, weights): output of shape (..., Lq, d_v) and the attention weights of shape
        (..., Lq, Lk), whose rows sum to 1. Lq may differ from Lk and d_k from d_v.
    """
    d_k = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)  # (..., Lq, Lk)
    weights = softmax(scores, axis=-1)                   # (..., Lq, Lk), rows sum to 1
    output = weights @ v                                 # (..., Lq, d_v)
    return output, weights
