# lesson: 07_transformer_block
# source: K7theCompSciMan/S.P.A.R.K llm/TransformerBlock.py 66d6060e62eacc411e11453e074f4020e5574e17
# adapted: attention, ln1, ln2 -> attn, norm1, norm2; embed_dim, ff_dim -> d_model, d_ff; GELU -> the contract's
# adapted: ReLU; nn.MultiheadAttention given the block's dropout and batch_first=True as the contract's attn has.
# bug report: post-norm; the course's mask (True = may attend) goes to attn_mask unconverted (True = blocked).
# expect: wrong TransformerBlock post-norm mask-inverted
# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff),
            nn.ReLU(),
            nn.Linear(d_ff, d_model)
        )
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        attention_output, _ = self.attn(x, x, x, attn_mask=mask)
        x = self.norm1(x + self.dropout(attention_output))
        x = self.norm2(x + self.dropout(self.ff(x)))
        return x
