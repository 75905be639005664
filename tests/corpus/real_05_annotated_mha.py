# lesson: 05_multi_head_attention
# source: harvardnlp/annotated-transformer the_annotated_transformer.py debc9fd747bb2123160a98046ad1c2d4da44a567  (https://github.com/harvardnlp/annotated-transformer/blob/debc9fd747bb2123160a98046ad1c2d4da44a567/the_annotated_transformer.py)
# bug report: none (the -1e9 fill never meets a fully blocked row in the tutorial's masks)
# adapted: MultiHeadedAttention(h, d_model, dropout=0.1) -> MultiHeadAttention(d_model, num_heads, dropout=0.0);
#   clones(nn.Linear(d_model, d_model), 4) -> w_q, w_k, w_v, w_o (zip over the first three, w_o last as
#   linears[-1]); `mask = mask.unsqueeze(1)` dropped: the original takes (B, Lq, Lk) masks and adds the head axis,
#   the course's masks already broadcast to (B, h, Lq, Lk).
# expect: wrong MultiHeadAttention masked-row-leak -
# Also wrong, no catalogued id: `assert` instead of ValueError when d_model % num_heads != 0.
# %% MultiHeadAttention
def attention(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        "Take in model size and number of heads."
        super(MultiHeadAttention, self).__init__()
        assert d_model % num_heads == 0
        # We assume d_v always equals d_k
        self.d_k = d_model // num_heads
        self.h = num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        "Implements Figure 2"
        nbatches = query.size(0)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip((self.w_q, self.w_k, self.w_v), (query, key, value))
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(
            query, key, value, mask=mask, dropout=self.dropout
        )

        # 3) "Concat" using a view and apply a final linear.
        x = (
            x.transpose(1, 2)
            .contiguous()
            .view(nbatches, -1, self.h * self.d_k)
        )
        del query
        del key
        del value
        return self.w_o(x)
