# lesson: 07_transformer_block
# expect: wrong TransformerBlock post-norm
# The original paper's post-norm arrangement: LayerNorm(x + Sublayer(x)).
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
        m = None
        if mask is not None:
            m = ~torch.as_tensor(mask).bool().expand(B, T, T).repeat_interleave(self.attn.num_heads, dim=0)
        x = self.norm1(x + self.dropout(self.attn(x, x, x, attn_mask=m)[0]))
        x = self.norm2(x + self.dropout(self.ff(x)))
        return x
