# lesson: 05_multi_head_attention
# source: bentrevett/pytorch-seq2seq "6 - Attention is All You Need.ipynb" 7faa64a895fe4b76cb87409d66a0ba349a78298e  (https://github.com/bentrevett/pytorch-seq2seq/blob/7faa64a895fe4b76cb87409d66a0ba349a78298e/6%20-%20Attention%20is%20All%20You%20Need.ipynb)
# bug report: none
# adapted: the head split (Q.view(...).permute(0, 2, 1, 3)) and merge (permute, contiguous, view) lines of
#   MultiHeadAttentionLayer.forward lifted into the two graded functions (self.n_heads = num_heads,
#   self.head_dim = d_model // num_heads, self.hid_dim = h * head_dim read from x).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    batch_size = x.shape[0]
    head_dim = x.shape[-1] // num_heads
    return x.view(batch_size, -1, num_heads, head_dim).permute(0, 2, 1, 3)
# %% merge_heads
def merge_heads(x):
    batch_size, n_heads, _, head_dim = x.shape
    x = x.permute(0, 2, 1, 3).contiguous()
    return x.view(batch_size, -1, n_heads * head_dim)
