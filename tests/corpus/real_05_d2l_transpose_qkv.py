# lesson: 05_multi_head_attention
# source: d2l-ai/d2l-en chapter_attention-mechanisms-and-transformers/multihead-attention.md 04488e8cf7d1b2b6812136e3172d8db57cf4406c  (https://github.com/d2l-ai/d2l-en/blob/04488e8cf7d1b2b6812136e3172d8db57cf4406c/chapter_attention-mechanisms-and-transformers/multihead-attention.md), the PyTorch tab
# bug report: none (d2l folds the heads into the batch axis on purpose: (B * h, T, d_k))
# adapted: the methods transpose_qkv(self, X) and transpose_output(self, X) -> split_heads(x, num_heads) and
#   merge_heads(x) (self.num_heads = num_heads; merge_heads has no num_heads argument, so it reads it from x.shape[1]).
# expect: wrong split_heads wrong-shape
# expect: wrong merge_heads wrong-shape
# Both keep d2l's folded layout: split returns (B * h, T, d_k), and merge expects that layout back.
# %% split_heads
def split_heads(x, num_heads):
    """Transposition for parallel computation of multiple attention heads."""
    X = x
    # Shape of input X: (batch_size, no. of queries or key-value pairs,
    # num_hiddens). Shape of output X: (batch_size, no. of queries or
    # key-value pairs, num_heads, num_hiddens / num_heads)
    X = X.reshape(X.shape[0], X.shape[1], num_heads, -1)
    # Shape of output X: (batch_size, num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    X = X.permute(0, 2, 1, 3)
    # Shape of output: (batch_size * num_heads, no. of queries or key-value
    # pairs, num_hiddens / num_heads)
    return X.reshape(-1, X.shape[2], X.shape[3])
# %% merge_heads
def merge_heads(x):
    """Reverse the operation of transpose_qkv."""
    X, num_heads = x, x.shape[1]
    X = X.reshape(-1, num_heads, X.shape[1], X.shape[2])
    X = X.permute(0, 2, 1, 3)
    return X.reshape(X.shape[0], X.shape[1], -1)
