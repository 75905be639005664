# lesson: 01_scaled_dot_product_attention
# source: jtappen1/Machine-Learning-From-Scratch models/self-attention/self_attention.py 6bf2f465bfc2b405c333ccd7f054fa40860cc179  (https://github.com/jtappen1/Machine-Learning-From-Scratch/blob/6bf2f465bfc2b405c333ccd7f054fa40860cc179/models/self-attention/self_attention.py)
# bug report: none
# adapted: softmax(x) -> softmax(x, axis=-1) (the new parameter is not used: the original always normalises the
#   last axis); the script's steps (Q @ K.T, / np.sqrt(d_k) with d_k = K.shape[1], softmax, @ V) wrapped into
#   scaled_dot_product_attention, returning (output, weights).
# expect: wrong softmax softmax-ignores-axis
# expect: wrong scaled_dot_product_attention batched-transpose
# %% softmax
def softmax(x, axis=-1):
    e_x = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e_x / e_x.sum(axis=-1, keepdims=True)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    Q, K, V = q, k, v
    d_k = K.shape[1]
    attention_scores = Q @ K.T  # shape 3 x 3

    scaled_scores = attention_scores / np.sqrt(d_k)

    attention_weights = softmax(scaled_scores)

    output = attention_weights @ V
    return output, attention_weights
