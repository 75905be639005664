# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax softmax-ignores-axis
# %% softmax
def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)      # ignores `axis`
