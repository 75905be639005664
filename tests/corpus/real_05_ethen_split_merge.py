# lesson: 05_multi_head_attention
# source: ethen8181/machine-learning deep_learning/seq2seq/torch_transformer.ipynb 38c82cf1990c3ba9972c8f11dcb350170f899ded  (https://github.com/ethen8181/machine-learning/blob/38c82cf1990c3ba9972c8f11dcb350170f899ded/deep_learning/seq2seq/torch_transformer.ipynb)
# bug report: none for these lines (ethen8181/machine-learning#13 concerns the scale and the output projection)
# adapted: the query split (view, permute(0, 2, 1, 3)) and the merge (permute(0, 2, 1, 3), contiguous, view) lines
#   of MultiHeadAttention.forward lifted into the two graded functions (self.n_heads = num_heads,
#   self.head_dim = hid_dim // num_heads, self.hid_dim read from x).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    batch_size, query_len, hid_dim = x.shape
    query_proj = x.view(batch_size, query_len, num_heads, hid_dim // num_heads)
    query_proj = query_proj.permute(0, 2, 1, 3)
    return query_proj
# %% merge_heads
def merge_heads(x):
    batch_size, n_heads, query_len, head_dim = x.shape
    output = x.permute(0, 2, 1, 3).contiguous().view(batch_size, query_len, n_heads * head_dim)
    return output
