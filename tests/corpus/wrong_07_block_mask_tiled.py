# lesson: 07_transformer_block
# expect: wrong TransformerBlock mask-misbroadcast
# The per-sequence mask expanded to (B * h, T, T) with .repeat(h, 1, 1): torch reads row b * h + i as
# sequence b, head i, so head i of sequence b gets the mask of sequence (b * h + i) % B.
# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.drop1, self.drop2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        attn_mask = None
        if mask is not None:
            attn_mask = ~torch.as_tensor(mask).bool().expand(B, T, T).repeat(self.attn.num_heads, 1, 1)
        h = self.norm1(x)
        x = x + self.drop1(self.attn(h, h, h, attn_mask=attn_mask, need_weights=False)[0])
        return x + self.drop2(self.ff(self.norm2(x)))
