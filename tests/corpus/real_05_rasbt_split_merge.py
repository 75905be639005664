# lesson: 05_multi_head_attention
# source: rasbt/LLMs-from-scratch pkg/llms_from_scratch/ch03.py 28c65cdfbc3338e2e040016eea4b7fdf556e4d57  (https://github.com/rasbt/LLMs-from-scratch/blob/28c65cdfbc3338e2e040016eea4b7fdf556e4d57/pkg/llms_from_scratch/ch03.py)
# bug report: none
# adapted: the head split (view to (b, num_tokens, num_heads, head_dim), then transpose(1, 2)) and the combine
#   (transpose(1, 2), reshape(b, num_tokens, d_out)) lines of MultiHeadAttention.forward lifted into the two graded
#   functions (self.num_heads = num_heads, self.head_dim = d_out // num_heads, self.d_out read from x).
# expect: correct
# %% split_heads
def split_heads(x, num_heads):
    b, num_tokens, d_out = x.shape
    # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
    x = x.view(b, num_tokens, num_heads, d_out // num_heads)
    # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
    return x.transpose(1, 2)
# %% merge_heads
def merge_heads(x):
    b, num_heads, num_tokens, head_dim = x.shape
    # Shape: (b, num_tokens, num_heads, head_dim)
    context_vec = x.transpose(1, 2)
    # Combine heads, where self.d_out = self.num_heads * self.head_dim
    return context_vec.reshape(b, num_tokens, num_heads * head_dim)
