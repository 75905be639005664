# lesson: 01_scaled_dot_product_attention
# source: tests/degenerate.py (uniform): an answer that does nothing; it must score 0
# expect: wrong softmax -
# %% softmax
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    return np.ones_like(x) / x.shape[axis]
