# lesson: 01_scaled_dot_product_attention
# source: tests/degenerate.py (empty): an answer that does nothing; it must score 0
# expect: wrong softmax wrong-shape
# %% softmax
def softmax(x, axis=-1):
    return np.array([])
