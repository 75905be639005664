# lesson: 01_scaled_dot_product_attention
# source: nexus-4/self-attention-mechanism attention.py 70bb357d266b357e7054c90061bb6401a8ec22b9  (https://github.com/nexus-4/self-attention-mechanism/blob/70bb357d266b357e7054c90061bb6401a8ec22b9/attention.py)
# bug report: none
# adapted: nothing (name and signature already match).
# expect: correct
# %% softmax
def softmax(x, axis=-1):
    """
    Calcula o softmax de cada linha da matriz x.
    """
    # Subtrai o valor máximo de cada linha para estabilidade numérica
    x_max = np.max(x, axis=axis, keepdims=True)
    e_x = np.exp(x - x_max)
    return e_x / np.sum(e_x, axis=axis, keepdims=True)
