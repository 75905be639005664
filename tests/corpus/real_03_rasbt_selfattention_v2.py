# lesson: 03_self_attention_head
# source: rasbt/LLMs-from-scratch pkg/llms_from_scratch/ch03.py 28c65cdfbc3338e2e040016eea4b7fdf556e4d57  (https://github.com/rasbt/LLMs-from-scratch/blob/28c65cdfbc3338e2e040016eea4b7fdf556e4d57/pkg/llms_from_scratch/ch03.py)
# bug report: none (the book applies SelfAttention_v2 to one unbatched (T, d) sequence, where .T is right)
# adapted: SelfAttention_v2(d_in, d_out, qkv_bias=False) -> SelfAttentionHead(d_model, d_k); W_query/W_key/W_value ->
#   w_q/w_k/w_v; forward gains the contract's `mask=None` parameter, which the original has no code for.
# expect: wrong SelfAttentionHead batched-transpose -
# Also wrong, no catalogued id: no bias (qkv_bias=False); the mask is ignored.
# %% SelfAttentionHead
class SelfAttentionHead(nn.Module):

    def __init__(self, d_model, d_k, qkv_bias=False):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=qkv_bias)
        self.w_k = nn.Linear(d_model, d_k, bias=qkv_bias)
        self.w_v = nn.Linear(d_model, d_k, bias=qkv_bias)

    def forward(self, x, mask=None):
        keys = self.w_k(x)
        queries = self.w_q(x)
        values = self.w_v(x)

        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1]**0.5, dim=-1)

        context_vec = attn_weights @ values
        return context_vec
