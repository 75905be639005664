# lesson: 01_scaled_dot_product_attention
# source: tests/degenerate.py (constant): an answer that does nothing; it must score 0
# expect: wrong softmax -
# %% softmax
def softmax(x, axis=-1):
    return np.full(np.shape(x), 0.5)
