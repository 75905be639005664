# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-global-max
# Walkthrough: one max for the whole array; rows far below it underflow to 0/0.
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)
