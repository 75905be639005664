# lesson: 05_multi_head_attention
# source: jadore801120/attention-is-all-you-need-pytorch transformer/SubLayers.py + transformer/Modules.py 132907dd272e2cc92e3c10e6c4e783a87ff8893d  (https://github.com/jadore801120/attention-is-all-you-need-pytorch/tree/132907dd272e2cc92e3c10e6c4e783a87ff8893d/transformer)
# bug report: none
# adapted: MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=0.1) -> MultiHeadAttention(d_model, num_heads,
#   dropout=0.0) with d_k = d_v = d_model // num_heads; w_qs/w_ks/w_vs/fc -> w_q/w_k/w_v/w_o; forward(q, k, v, mask)
#   names -> query, key, value; ScaledDotProductAttention inlined in the same cell; returns q only (the original
#   returns (q, attn)); `mask = mask.unsqueeze(1)` dropped: the original takes (B, Lq, Lk) masks, the course's
#   already broadcast to (B, h, Lq, Lk).
# expect: wrong MultiHeadAttention masked-row-leak dropout-on-output -
# Also wrong, no catalogued id: no bias on any projection (bias=False); residual connection and LayerNorm inside
#   the module; attention dropout fixed at 0.1 whatever `dropout` says; no ValueError check.
# %% MultiHeadAttention
import torch.nn.functional as F

class ScaledDotProductAttention(nn.Module):
    ''' Scaled Dot-Product Attention '''

    def __init__(self, temperature, attn_dropout=0.1):
        super().__init__()
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)

    def forward(self, q, k, v, mask=None):

        attn = torch.matmul(q / self.temperature, k.transpose(2, 3))

        if mask is not None:
            attn = attn.masked_fill(mask == 0, -1e9)

        attn = self.dropout(F.softmax(attn, dim=-1))
        output = torch.matmul(attn, v)

        return output, attn


class MultiHeadAttention(nn.Module):
    ''' Multi-Head Attention module '''

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()

        n_head = num_heads
        d_k = d_v = d_model // num_heads
        self.n_head = n_head
        self.d_k = d_k
        self.d_v = d_v

        self.w_q = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_k = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_v = nn.Linear(d_model, n_head * d_v, bias=False)
        self.w_o = nn.Linear(n_head * d_v, d_model, bias=False)

        self.attention = ScaledDotProductAttention(temperature=d_k ** 0.5)

        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)


    def forward(self, query, key, value, mask=None):
        q, k, v = query, key, value

        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, len_k, len_v = q.size(0), q.size(1), k.size(1), v.size(1)

        residual = q

        # Pass through the pre-attention projection: b x lq x (n*dv)
        # Separate different heads: b x lq x n x dv
        q = self.w_q(q).view(sz_b, len_q, n_head, d_k)
        k = self.w_k(k).view(sz_b, len_k, n_head, d_k)
        v = self.w_v(v).view(sz_b, len_v, n_head, d_v)

        # Transpose for attention dot product: b x n x lq x dv
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        q, attn = self.attention(q, k, v, mask=mask)

        # Transpose to move the head dimension back: b x lq x n x dv
        # Combine the last two dimensions to concatenate all the heads together: b x lq x (n*dv)
        q = q.transpose(1, 2).contiguous().view(sz_b, len_q, -1)
        q = self.dropout(self.w_o(q))
        q += residual

        q = self.layer_norm(q)

        return q
