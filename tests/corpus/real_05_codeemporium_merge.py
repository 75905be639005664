# lesson: 05_multi_head_attention
# source: andyluken/transformers "Multihead _Attention.py" f8a45f887ee3dac33ed972c3364840a28aaae481  (https://github.com/andyluken/transformers/blob/f8a45f887ee3dac33ed972c3364840a28aaae481/Multihead%20_Attention.py)
#   (a copy of the code of the CodeEmporium "Transformer from scratch" video series)
# bug report: none found
# adapted: the split (reshape(batch_size, sequence_length, num_heads, head_dim) + permute(0, 2, 1, 3), as the
#   original does for its fused qkv) and the merge line `values.reshape(batch_size, sequence_length,
#   num_heads * head_dim)` of MultiheadAttention.forward lifted into the two graded functions.
# expect: wrong merge_heads heads-mixed
# The split is right; the merge reshapes (B, h, T, d) straight to (B, T, h * d) without moving the head axis back.
# %% split_heads
def split_heads(x, num_heads):
    batch_size, sequence_length, d_model = x.size()
    x = x.reshape(batch_size, sequence_length, num_heads, d_model // num_heads)
    return x.permute(0, 2, 1, 3)
# %% merge_heads
def merge_heads(x):
    batch_size, num_heads, sequence_length, head_dim = x.size()
    values = x.reshape(batch_size, sequence_length, num_heads * head_dim)
    return values
