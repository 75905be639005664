# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax not-implemented
# The released stub, untouched (the file has no cells to replace).
