# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-ignores-axis
# Walkthrough: the axis argument is accepted and ignored.
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
