# lesson: 01_scaled_dot_product_attention
# source: Fangzhou-Code/Learn_AI 第四阶段：大模型/self_attention.py 5d92ac48fd6b614084ed712bbce74526d202d6da  (https://github.com/Fangzhou-Code/Learn_AI/blob/5d92ac48fd6b614084ed712bbce74526d202d6da/%E7%AC%AC%E5%9B%9B%E9%98%B6%E6%AE%B5%EF%BC%9A%E5%A4%A7%E6%A8%A1%E5%9E%8B/self_attention.py)
#   (the same script is in Geneww/llm_tools self_attention.py)
# bug report: none
# adapted: soft_max(z) -> softmax(x, axis=-1) (the new parameter is not used: the original has none); the script's
#   three steps (scores = Query @ Key.T; soft_max; @ Value) wrapped into scaled_dot_product_attention, returning
#   (output, weights).
# expect: wrong softmax softmax-unstable softmax-ignores-axis softmax-wrong-axis
# (issue 32: the attention is graded with the reference softmax in place of the wrong one, so softmax-unstable
#  is named in softmax only)
# expect: wrong scaled_dot_product_attention missing-scale batched-transpose
# soft_max always sums over axis 1 (the key axis of a 2-D score matrix, the query axis of a batched one) without
# subtracting the max; the script never divides by sqrt(d_k).
# %% softmax
def softmax(x, axis=-1):
    z = x
    t = np.exp(z)
    a = np.exp(z) / np.expand_dims(np.sum(t, axis=1), 1)
    return a
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.T
    scores = softmax(scores)
    out = scores @ v
    return out, scores
