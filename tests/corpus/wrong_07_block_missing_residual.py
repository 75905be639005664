# lesson: 07_transformer_block
# expect: wrong TransformerBlock missing-residual
# The feed-forward output replaces x: only the attention sublayer keeps its residual connection.
# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        m = None if mask is None else ~torch.as_tensor(mask).bool().expand(B, T, T).repeat_interleave(self.attn.num_heads, 0)
        h = self.norm1(x)
        x = x + self.dropout(self.attn(h, h, h, attn_mask=m)[0])
        x = self.dropout(self.ff(self.norm2(x)))
        return x
