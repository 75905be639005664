# lesson: 02_masking
# source: tests/degenerate.py (empty): an answer that does nothing; it must score 0
# expect: wrong scaled_dot_product_attention wrong-shape
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    return np.array([]), np.array([])
