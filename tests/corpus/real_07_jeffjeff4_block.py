# lesson: 07_transformer_block
# source: jeffjeff4/mlCode transformerBlockV0.py df8f83e49066ca5f5c12ec4ce2d6b223e9fa031b
# adapted: embed_dim, ff_hidden_dim -> d_model, d_ff; batch_first=True as the contract's attn has it; the
# adapted: argument attn_mask renamed mask (passed on as it was); the demo lines at the end left out.
# bug report: post-norm; the course's mask (True = may attend) is handed to nn.MultiheadAttention unconverted,
# bug report: where True means blocked.
# expect: wrong TransformerBlock post-norm mask-inverted
# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.1):
        super(TransformerBlock, self).__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff),
            nn.ReLU(),
            nn.Linear(d_ff, d_model)
        )
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        # --- self attention ---
        attn_output, _ = self.attn(x, x, x, attn_mask=mask)
        x = x + self.dropout(attn_output)
        x = self.norm1(x)

        # --- feed forward---
        ff_output = self.ff(x)
        x = x + self.dropout(ff_output)
        x = self.norm2(x)

        return x
