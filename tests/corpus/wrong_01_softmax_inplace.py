# lesson: 01_scaled_dot_product_attention
# expect: wrong softmax input-modified
# %% softmax
def softmax(x, axis=-1):
    x -= x.max(axis=axis, keepdims=True)          # modifies the caller's array
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
