# lesson: 05_multi_head_attention
# source: bentrevett/pytorch-seq2seq "6 - Attention is All You Need.ipynb" 7faa64a895fe4b76cb87409d66a0ba349a78298e  (https://github.com/bentrevett/pytorch-seq2seq/blob/7faa64a895fe4b76cb87409d66a0ba349a78298e/6%20-%20Attention%20is%20All%20You%20Need.ipynb)
# bug report: none (the tutorial's padding masks never block a whole row)
# adapted: MultiHeadAttentionLayer(hid_dim, n_heads, dropout, device) -> MultiHeadAttention(d_model, num_heads,
#   dropout=0.0) (the scale tensor stays on the default device); fc_q/fc_k/fc_v/fc_o -> w_q/w_k/w_v/w_o; returns x
#   only (the original returns (x, attention)).
# expect: wrong MultiHeadAttention masked-row-leak -
# Also wrong, no catalogued id: `assert` instead of ValueError when d_model % num_heads != 0.
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        
        assert d_model % num_heads == 0
        
        self.hid_dim = d_model
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        
        self.w_o = nn.Linear(d_model, d_model)
        
        self.dropout = nn.Dropout(dropout)
        
        self.scale = torch.sqrt(torch.FloatTensor([self.head_dim]))
        
    def forward(self, query, key, value, mask = None):
        
        batch_size = query.shape[0]
        
        #query = [batch size, query len, hid dim]
        #key = [batch size, key len, hid dim]
        #value = [batch size, value len, hid dim]
                
        Q = self.w_q(query)
        K = self.w_k(key)
        V = self.w_v(value)
        
        #Q = [batch size, query len, hid dim]
        #K = [batch size, key len, hid dim]
        #V = [batch size, value len, hid dim]
                
        Q = Q.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        K = K.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        V = V.view(batch_size, -1, self.n_heads, self.head_dim).permute(0, 2, 1, 3)
        
        #Q = [batch size, n heads, query len, head dim]
        #K = [batch size, n heads, key len, head dim]
        #V = [batch size, n heads, value len, head dim]
                
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        
        #energy = [batch size, n heads, query len, key len]
        
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        
        attention = torch.softmax(energy, dim = -1)
                
        #attention = [batch size, n heads, query len, key len]
                
        x = torch.matmul(self.dropout(attention), V)
        
        #x = [batch size, n heads, query len, head dim]
        
        x = x.permute(0, 2, 1, 3).contiguous()
        
        #x = [batch size, query len, n heads, head dim]
        
        x = x.view(batch_size, -1, self.hid_dim)
        
        #x = [batch size, query len, hid dim]
        
        x = self.w_o(x)
        
        #x = [batch size, query len, hid dim]
        
        return x
