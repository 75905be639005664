# lesson: 05_multi_head_attention
# source: jadore801120/attention-is-all-you-need-pytorch transformer/SubLayers.py + transformer/Modules.py 300418eb98e1894f433dd0098b77c2f4d2f7c59f  (https://github.com/jadore801120/attention-is-all-you-need-pytorch/tree/300418eb98e1894f433dd0098b77c2f4d2f7c59f/transformer)
# bug report: the temperature was fixed upstream in jadore801120/attention-is-all-you-need-pytorch@e108f0f "temperature definition fix" (np.power(d_model, 0.5) -> np.power(d_k, 0.5))
# adapted: MultiHeadAttention(n_head, d_model, d_k, d_v, dropout=0.1) -> MultiHeadAttention(d_model, num_heads,
#   dropout=0.0) with d_k = d_v = d_model // num_heads; w_qs/w_ks/w_vs/fc -> w_q/w_k/w_v/w_o;
#   ScaledDotProductAttention inlined in the same cell; returns output only (the original returns (output, attn)).
#   Mask: the original takes a (B, Lq, Lk) mask with True = blocked; one added line turns the course's mask into
#   that (`== 0`, expanded to (B, Lq, Lk)). The original's `mask.repeat(...)` is unguarded, so mask=None raises.
# expect: wrong MultiHeadAttention wrong-scale masked-row-nan dropout-on-output -
# Also wrong, no catalogued id: residual connection and LayerNorm inside the module (output = LN(fc(.) + query));
#   attention dropout fixed at 0.1 whatever `dropout` says; fails with mask=None; no ValueError check.
# %% MultiHeadAttention
class ScaledDotProductAttention(nn.Module):
    ''' Scaled Dot-Product Attention '''

    def __init__(self, temperature, attn_dropout=0.1):
        super().__init__()
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)
        self.softmax = nn.Softmax(dim=2)

    def forward(self, q, k, v, mask=None):

        attn = torch.bmm(q, k.transpose(1, 2))
        attn = attn / self.temperature

        if mask is not None:
            attn = attn.masked_fill(mask, -np.inf)

        attn = self.softmax(attn)
        attn = self.dropout(attn)
        output = torch.bmm(attn, v)

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

        self.w_q = nn.Linear(d_model, n_head * d_k)
        self.w_k = nn.Linear(d_model, n_head * d_k)
        self.w_v = nn.Linear(d_model, n_head * d_v)
        nn.init.xavier_normal_(self.w_q.weight)
        nn.init.xavier_normal_(self.w_k.weight)
        nn.init.xavier_normal_(self.w_v.weight)

        self.attention = ScaledDotProductAttention(temperature=np.power(d_model, 0.5))
        self.layer_norm = nn.LayerNorm(d_model)

        self.w_o = nn.Linear(n_head * d_v, d_model)
        nn.init.xavier_normal_(self.w_o.weight)

        self.dropout = nn.Dropout(dropout)


    def forward(self, query, key, value, mask=None):
        q, k, v = query, key, value

        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head

        sz_b, len_q, _ = q.size()
        sz_b, len_k, _ = k.size()
        sz_b, len_v, _ = v.size()

        if mask is not None:  # adapted: the course's mask -> the original's (B, Lq, Lk), True = blocked
            mask = (torch.as_tensor(mask) == 0).expand(sz_b, 1, len_q, len_k)[:, 0]

        residual = q

        q = self.w_q(q).view(sz_b, len_q, n_head, d_k)
        k = self.w_k(k).view(sz_b, len_k, n_head, d_k)
        v = self.w_v(v).view(sz_b, len_v, n_head, d_v)

        q = q.permute(2, 0, 1, 3).contiguous().view(-1, len_q, d_k) # (n*b) x lq x dk
        k = k.permute(2, 0, 1, 3).contiguous().view(-1, len_k, d_k) # (n*b) x lk x dk
        v = v.permute(2, 0, 1, 3).contiguous().view(-1, len_v, d_v) # (n*b) x lv x dv

        mask = mask.repeat(n_head, 1, 1) # (n*b) x .. x ..
        output, attn = self.attention(q, k, v, mask=mask)

        output = output.view(n_head, sz_b, len_q, d_v)
        output = output.permute(1, 2, 0, 3).contiguous().view(sz_b, len_q, -1) # b x lq x (n*dv)

        output = self.dropout(self.w_o(output))
        output = self.layer_norm(output + residual)

        return output
