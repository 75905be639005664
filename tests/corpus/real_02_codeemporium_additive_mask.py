# lesson: 02_masking
# source: andyluken/transformers SelfAttention.py f8a45f887ee3dac33ed972c3364840a28aaae481  (https://github.com/andyluken/transformers/blob/f8a45f887ee3dac33ed972c3364840a28aaae481/SelfAttention.py)
#   (a copy of the NumPy self-attention of the CodeEmporium "Transformer from scratch" video series)
# bug report: none found
# adapted: the original adds an additive mask built outside the function (0 = attend, -inf = blocked); one added
#   line builds it from the course's mask (True/1 = attend). The lesson's setup gives the stable softmax, which the
#   attention calls (the original's own softmax is lesson 1's exercise); math imported in the cell.
# expect: wrong scaled_dot_product_attention masked-row-nan batched-transpose
# %% scaled_dot_product_attention
import math

def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = q.shape[-1]
    scaled = np.matmul(q, k.T) / math.sqrt(d_k)
    if mask is not None:
        mask = np.where(np.asarray(mask) != 0, 0.0, -np.inf)  # adapted: the original's additive mask
        scaled = scaled + mask
    attention = softmax(scaled)
    out = np.matmul(attention, v)
    return out, attention
