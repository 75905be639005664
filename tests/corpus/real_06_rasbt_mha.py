# lesson: 06_debugging_projection_reuse
# source: rasbt/LLMs-from-scratch pkg/llms_from_scratch/ch03.py 28c65cdfbc3338e2e040016eea4b7fdf556e4d57  (https://github.com/rasbt/LLMs-from-scratch/blob/28c65cdfbc3338e2e040016eea4b7fdf556e4d57/pkg/llms_from_scratch/ch03.py)
# bug report: none (the book's causal mask never blocks a whole row)
# adapted: MultiHeadAttention(d_in, d_out, context_length, dropout, num_heads, qkv_bias=False) ->
#   FixedMultiHeadAttention(d_model, num_heads, dropout) (qkv_bias keeps its default False); W_query/W_key/W_value/
#   out_proj -> q_project/k_project/v_project/o_project; the causal buffer (triu, True = blocked) replaced by
#   attn_mask turned into the original's convention (`attn_mask[:, None] == 0`, skipped when None).
# expect: wrong FixedMultiHeadAttention masked-row-nan -
# Also wrong, no catalogued id: q/k/v projections without bias (qkv_bias=False).
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout, qkv_bias=False):
        super().__init__()
        assert d_model % num_heads == 0, "d_out must be divisible by n_heads"

        self.d_out = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads  # Reduce the projection dim to match desired output dim

        self.q_project = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.k_project = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.v_project = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.o_project = nn.Linear(d_model, d_model)  # Linear layer to combine head outputs
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, attn_mask=None):
        b, num_tokens, d_in = x.shape

        keys = self.k_project(x)  # Shape: (b, num_tokens, d_out)
        queries = self.q_project(x)
        values = self.v_project(x)

        # We implicitly split the matrix by adding a `num_heads` dimension
        # Unroll last dim: (b, num_tokens, d_out) -> (b, num_tokens, num_heads, head_dim)
        keys = keys.view(b, num_tokens, self.num_heads, self.head_dim)
        values = values.view(b, num_tokens, self.num_heads, self.head_dim)
        queries = queries.view(b, num_tokens, self.num_heads, self.head_dim)

        # Transpose: (b, num_tokens, num_heads, head_dim) -> (b, num_heads, num_tokens, head_dim)
        keys = keys.transpose(1, 2)
        queries = queries.transpose(1, 2)
        values = values.transpose(1, 2)

        # Compute scaled dot-product attention (aka self-attention) with a causal mask
        attn_scores = queries @ keys.transpose(2, 3)  # Dot product for each head

        if attn_mask is not None:
            # adapted: the course's mask (1 = attend) as the original's boolean mask (True = blocked)
            mask_bool = attn_mask[:, None] == 0

            # Use the mask to fill attention scores
            attn_scores.masked_fill_(mask_bool, -torch.inf)

        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)

        # Shape: (b, num_tokens, num_heads, head_dim)
        context_vec = (attn_weights @ values).transpose(1, 2)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.reshape(b, num_tokens, self.d_out)
        context_vec = self.o_project(context_vec)  # optional projection

        return context_vec
