# lesson: 06_debugging_projection_reuse
# source: rasbt/LLMs-from-scratch ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb 28c65cdfbc3338e2e040016eea4b7fdf556e4d57  (https://github.com/rasbt/LLMs-from-scratch/blob/28c65cdfbc3338e2e040016eea4b7fdf556e4d57/ch03/02_bonus_efficient-multihead-attention/mha-implementations.ipynb), class MHAPyTorchSDPAWithoutFlash
# bug report: rasbt/LLMs-from-scratch#1061 ("For scaled_dot_product_attention, True indicates values to participate in attention, but here the attn_mask is torch.triu(...).bool() ... we need ~attn_mask")
# adapted: MHAPyTorchSDPAWithoutFlash(d_in, d_out, num_heads, context_length, dropout=0.0, qkv_bias=False) ->
#   FixedMultiHeadAttention(d_model, num_heads, dropout) (qkv_bias keeps its default False); proj -> o_project; the
#   fused qkv Linear(d_model, 3 * d_model) becomes its three row blocks q_project/k_project/v_project, concatenated
#   in the same order (the same computation as the fused layer). The causal buffer (triu(diagonal=1).bool(), True =
#   blocked) is replaced by attn_mask in that same convention (`attn_mask[:, None] == 0`), passed on unchanged as
#   upstream does; with attn_mask None, no mask.
# expect: wrong FixedMultiHeadAttention mask-inverted -
# Also wrong, no catalogued id: q/k/v projections without bias (qkv_bias=False).
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout, qkv_bias=False):
        super().__init__()

        assert d_model % num_heads == 0, "d_out is indivisible by num_heads"

        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.d_out = d_model

        self.q_project = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.k_project = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.v_project = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.o_project = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def forward(self, x, attn_mask=None):
        batch_size, num_tokens, embed_dim = x.shape

        # (b, num_tokens, embed_dim) --> (b, num_tokens, 3 * embed_dim)
        qkv = torch.cat([self.q_project(x), self.k_project(x), self.v_project(x)], dim=-1)

        # (b, num_tokens, 3 * embed_dim) --> (b, num_tokens, 3, num_heads, head_dim)
        qkv = qkv.view(batch_size, num_tokens, 3, self.num_heads, self.head_dim)

        # (b, num_tokens, 3, num_heads, head_dim) --> (3, b, num_heads, num_tokens, head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)

        # (3, b, num_heads, num_tokens, head_dim) -> 3 times (b, num_heads, num_tokens, head_dim)
        queries, keys, values = qkv

        use_dropout = 0. if not self.training else self.dropout

        # adapted: the course's mask in the convention of upstream's causal buffer (True = blocked)
        if attn_mask is not None:
            attn_mask = attn_mask[:, None] == 0

        context_vec = nn.functional.scaled_dot_product_attention(
            queries, keys, values, attn_mask=attn_mask, dropout_p=use_dropout, is_causal=False)

        # Combine heads, where self.d_out = self.num_heads * self.head_dim
        context_vec = context_vec.transpose(1, 2).contiguous().view(batch_size, num_tokens, self.d_out)

        context_vec = self.o_project(context_vec)

        return context_vec
