# lesson: 05_multi_head_attention
# source: harvardnlp/annotated-transformer the_annotated_transformer.py debc9fd747bb2123160a98046ad1c2d4da44a567  (https://github.com/harvardnlp/annotated-transformer/blob/debc9fd747bb2123160a98046ad1c2d4da44a567/the_annotated_transformer.py)
# bug report: none
# adapted: the split and the "concat" lines of MultiHeadedAttention.forward lifted into the two graded functions
#   (nbatches = x.size(0), self.h = num_heads, self.d_k = x.size(-1) // num_heads; merge reads h and d_k from x).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    nbatches = x.size(0)
    d_k = x.size(-1) // num_heads
    return x.view(nbatches, -1, num_heads, d_k).transpose(1, 2)
# %% merge_heads
def merge_heads(x):
    nbatches, h, _, d_k = x.shape
    return (
        x.transpose(1, 2)
        .contiguous()
        .view(nbatches, -1, h * d_k)
    )
