# lesson: 05_multi_head_attention
# source: karpathy/minGPT mingpt/model.py 38d7327dfdb671040b55624a90f92d2cfc54ff37  (https://github.com/karpathy/minGPT/blob/38d7327dfdb671040b55624a90f92d2cfc54ff37/mingpt/model.py)
# bug report: none
# adapted: the head split (`.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)`) and re-assembly
#   (`y.transpose(1, 2).contiguous().view(B, T, C)`) lines of CausalSelfAttention.forward lifted into the two graded
#   functions (self.n_head = num_heads; merge reads B, T and C = h * hs from x).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    B, T, C = x.size()
    return x.view(B, T, num_heads, C // num_heads).transpose(1, 2) # (B, nh, T, hs)
# %% merge_heads
def merge_heads(x):
    B, nh, T, hs = x.size()
    C = nh * hs
    return x.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side
