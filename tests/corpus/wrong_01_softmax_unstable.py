# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-unstable
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
