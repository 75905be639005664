# lesson: 07_transformer_block
# source: keqingli1129/trae-pytorch-is-easy gptblock.py d453138c7488da90defab10ba1423fc1334824c6
# adapted: Block -> TransformerBlock (n_head -> num_heads); batch_first=True as the contract's attn has it (the
# adapted: original reads (T, B, d_model)); forward takes the contract's mask argument, which the original has
# adapted: no use for (it is ignored).
# bug report: post-norm (norm1(x + attn(x)), norm2(x + ff(x))) instead of pre-norm; dropout is applied once to
# bug report: the block's output instead of to each residual branch; a mask is never applied.
# expect: wrong TransformerBlock post-norm
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
        attn_output, _ = self.attn(x, x, x)
        x = self.norm1(x + attn_output)
        ff_output = self.ff(x)
        x = self.norm2(x + ff_output)
        return self.dropout(x)
