# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-ignores-axis softmax-global-max
# Both softmax slips: global max, axis ignored.
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=-1, keepdims=True)
