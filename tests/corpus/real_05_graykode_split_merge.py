# lesson: 05_multi_head_attention
# source: graykode/nlp-tutorial 5-1.Transformer/Transformer.py d05e31ec81d56d70c1db89b99ab07e948f7ebc11  (https://github.com/graykode/nlp-tutorial/blob/d05e31ec81d56d70c1db89b99ab07e948f7ebc11/5-1.Transformer/Transformer.py)
# bug report: none
# adapted: the split (`.view(batch_size, -1, n_heads, d_k).transpose(1,2)`) and the context merge
#   (`.transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_v)`) lines of MultiHeadAttention.forward
#   lifted into the two graded functions (the globals n_heads, d_k, d_v from the arguments and x's shape).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    batch_size, d_k = x.size(0), x.size(-1) // num_heads
    # (B, S, D) -proj-> (B, S, D) -split-> (B, S, H, W) -trans-> (B, H, S, W)
    return x.view(batch_size, -1, num_heads, d_k).transpose(1,2)  # q_s: [batch_size x n_heads x len_q x d_k]
# %% merge_heads
def merge_heads(x):
    batch_size, n_heads, _, d_v = x.size()
    return x.transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_v) # context: [batch_size x len_q x n_heads * d_v]
