# lesson: 07_transformer_block
# expect: wrong TransformerBlock mask-inverted
# The course's mask (True = may attend) handed to nn.MultiheadAttention as is, where True = blocked.
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
        if mask is not None:
            mask = torch.as_tensor(mask).bool().expand(B, T, T).repeat_interleave(self.attn.num_heads, dim=0)
        h = self.norm1(x)
        x = x + self.drop1(self.attn(h, h, h, attn_mask=mask, need_weights=False)[0])
        return x + self.drop2(self.ff(self.norm2(x)))
