# lesson: 03_self_attention_head
# source: rasbt/LLMs-from-scratch pkg/llms_from_scratch/ch03.py 28c65cdfbc3338e2e040016eea4b7fdf556e4d57  (https://github.com/rasbt/LLMs-from-scratch/blob/28c65cdfbc3338e2e040016eea4b7fdf556e4d57/pkg/llms_from_scratch/ch03.py)
# bug report: none
# adapted: CausalAttention(d_in, d_out, context_length, dropout, qkv_bias=False) -> SelfAttentionHead(d_model, d_k)
#   (qkv_bias keeps its default False; dropout 0.0, the signature has none); W_query/W_key/W_value -> w_q/w_k/w_v;
#   the causal buffer (triu, True = blocked) replaced by the mask argument turned into the original's convention
#   (`mask == 0`, skipped when mask is None).
# expect: wrong SelfAttentionHead masked-row-nan -
# Also wrong, no catalogued id: the projections have no bias (qkv_bias=False).
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):

    def __init__(self, d_model, d_k, qkv_bias=False):
        super().__init__()
        self.d_out = d_k
        self.w_q = nn.Linear(d_model, d_k, bias=qkv_bias)
        self.w_k = nn.Linear(d_model, d_k, bias=qkv_bias)
        self.w_v = nn.Linear(d_model, d_k, bias=qkv_bias)
        self.dropout = nn.Dropout(0.0)  # New

    def forward(self, x, mask=None):
        b, num_tokens, d_in = x.shape  # New batch dimension b
        keys = self.w_k(x)
        queries = self.w_q(x)
        values = self.w_v(x)

        attn_scores = queries @ keys.transpose(1, 2)  # Changed transpose
        if mask is not None:
            blocked = torch.as_tensor(mask) == 0  # adapted: True/1 = attend -> the original's True = blocked
            attn_scores.masked_fill_(  # New, _ ops are in-place
                blocked, -torch.inf)
        attn_weights = torch.softmax(
            attn_scores / keys.shape[-1]**0.5, dim=-1
        )
        attn_weights = self.dropout(attn_weights)  # New

        context_vec = attn_weights @ values
        return context_vec
