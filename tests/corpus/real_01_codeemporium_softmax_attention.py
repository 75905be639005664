# lesson: 01_scaled_dot_product_attention
# source: andyluken/transformers SelfAttention.py f8a45f887ee3dac33ed972c3364840a28aaae481  (https://github.com/andyluken/transformers/blob/f8a45f887ee3dac33ed972c3364840a28aaae481/SelfAttention.py)
#   (a copy of the NumPy self-attention of the CodeEmporium "Transformer from scratch" video series)
# bug report: none found
# adapted: softmax(x) -> softmax(x, axis=-1) (the new parameter is not used: the original has none);
#   math imported in the cell (the lesson's setup does not import it).
# expect: wrong softmax softmax-unstable softmax-ignores-axis batched-transpose
# (issue 32: the attention is graded with the reference softmax in place of the wrong one, so softmax-unstable
#  is named in softmax only)
# expect: wrong scaled_dot_product_attention batched-transpose
# The softmax has no max subtraction and transposes with .T, which on a batched array reverses every axis; the
# attention uses k.T the same way and calls that softmax.
# %% softmax
def softmax(x, axis=-1):
    return (np.exp(x).T / np.sum(np.exp(x), axis=-1)).T
# %% scaled_dot_product_attention
import math

def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scaled = np.matmul(q, k.T) / math.sqrt(d_k)
    if mask is not None:
        scaled = scaled + mask
    attention = softmax(scaled)
    out = np.matmul(attention, v)
    return out, attention
