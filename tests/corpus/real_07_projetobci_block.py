# lesson: 07_transformer_block
# source: Bruno-BRG/projetoBCI src/model/TransformerBlock.py 4dc32fdb28fbda3a861b5e34b2f03d3c836a0c93
# adapted: attention, mlp, layernorm0, layernorm1 -> attn, ff, norm1, norm2; the Dropout inside mlp left out so
# adapted: that its Linear layers are ff.0 and ff.2 (ReLU(True) kept); forward takes the contract's mask
# adapted: argument, which the original has no use for (ignored).
# bug report: post-norm: layernorm0(x + attn(x)) and layernorm1(x + mlp(x)); a mask is never applied.
# expect: wrong TransformerBlock post-norm
# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff),
            nn.ReLU(True),
            nn.Linear(d_ff, d_model),
        )
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = dropout

    def forward(self, x, mask=None):
        y, _ = self.attn(x, x, x)
        y = F.dropout(y, self.dropout, training=self.training)
        x = self.norm1(x + y)
        y = self.ff(x)
        y = F.dropout(y, self.dropout, training=self.training)
        x = self.norm2(x + y)
        return x
