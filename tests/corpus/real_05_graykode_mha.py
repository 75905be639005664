# lesson: 05_multi_head_attention
# source: graykode/nlp-tutorial 5-1.Transformer/Transformer.py d05e31ec81d56d70c1db89b99ab07e948f7ebc11  (https://github.com/graykode/nlp-tutorial/blob/d05e31ec81d56d70c1db89b99ab07e948f7ebc11/5-1.Transformer/Transformer.py)
# bug report: none
# adapted: MultiHeadAttention() reading the globals d_model, d_k, d_v, n_heads -> MultiHeadAttention(d_model,
#   num_heads, dropout=0.0) (d_k = d_v = d_model // num_heads; dropout unused, as upstream has none);
#   W_Q/W_K/W_V/linear -> w_q/w_k/w_v/w_o; forward(Q, K, V, attn_mask) -> forward(query, key, value, mask=None);
#   ScaledDotProductAttention inlined (its global d_k read from the heads' shape); returns the output only (the
#   original returns (output, attn)). Mask: the original's attn_mask is (B, Lq, Lk) with 1 = blocked (pad or
#   future); one added line turns the course's mask into that. The original has no code for a missing mask:
#   attn_mask.unsqueeze fails on None.
# expect: wrong MultiHeadAttention masked-row-leak -
# Also wrong, no catalogued id: residual connection and LayerNorm inside the module; fails with mask=None; no
#   ValueError check.
# %% MultiHeadAttention
class ScaledDotProductAttention(nn.Module):
    def __init__(self):
        super(ScaledDotProductAttention, self).__init__()

    def forward(self, Q, K, V, attn_mask):
        d_k = Q.size(-1)
        scores = torch.matmul(Q, K.transpose(-1, -2)) / np.sqrt(d_k) # scores : [batch_size x n_heads x len_q(=len_k) x len_k(=len_q)]
        scores.masked_fill_(attn_mask, -1e9) # Fills elements of self tensor with value where mask is one.
        attn = nn.Softmax(dim=-1)(scores)
        context = torch.matmul(attn, V)
        return context, attn

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super(MultiHeadAttention, self).__init__()
        self.n_heads = n_heads = num_heads
        self.d_k = self.d_v = d_k = d_v = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_k * n_heads)
        self.w_k = nn.Linear(d_model, d_k * n_heads)
        self.w_v = nn.Linear(d_model, d_v * n_heads)
        self.w_o = nn.Linear(n_heads * d_v, d_model)
        self.layer_norm = nn.LayerNorm(d_model)

    def forward(self, query, key, value, mask=None):
        Q, K, V, n_heads, d_k, d_v = query, key, value, self.n_heads, self.d_k, self.d_v
        attn_mask = mask
        if mask is not None:  # adapted: the course's mask -> the original's (B, Lq, Lk), 1 = blocked
            attn_mask = (torch.as_tensor(mask) == 0).expand(Q.size(0), 1, Q.size(1), K.size(1))[:, 0]
        # q: [batch_size x len_q x d_model], k: [batch_size x len_k x d_model], v: [batch_size x len_k x d_model]
        residual, batch_size = Q, Q.size(0)
        # (B, S, D) -proj-> (B, S, D) -split-> (B, S, H, W) -trans-> (B, H, S, W)
        q_s = self.w_q(Q).view(batch_size, -1, n_heads, d_k).transpose(1,2)  # q_s: [batch_size x n_heads x len_q x d_k]
        k_s = self.w_k(K).view(batch_size, -1, n_heads, d_k).transpose(1,2)  # k_s: [batch_size x n_heads x len_k x d_k]
        v_s = self.w_v(V).view(batch_size, -1, n_heads, d_v).transpose(1,2)  # v_s: [batch_size x n_heads x len_k x d_v]

        attn_mask = attn_mask.unsqueeze(1).repeat(1, n_heads, 1, 1) # attn_mask : [batch_size x n_heads x len_q x len_k]

        # context: [batch_size x n_heads x len_q x d_v], attn: [batch_size x n_heads x len_q(=len_k) x len_k(=len_q)]
        context, attn = ScaledDotProductAttention()(q_s, k_s, v_s, attn_mask)
        context = context.transpose(1, 2).contiguous().view(batch_size, -1, n_heads * d_v) # context: [batch_size x len_q x n_heads * d_v]
        output = self.w_o(context)
        return self.layer_norm(output + residual) # output: [batch_size x len_q x d_model]
