# lesson: 07_transformer_block
# source: issue 23 (measured from outside): a block without dropout on its residual branches got 8/8,
# source: because nn.MultiheadAttention's own dropout already changes the training-mode output
# expect: wrong TransformerBlock -
# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
    def forward(self, x, mask=None):
        B, T, _ = x.shape
        attn_mask = None
        if mask is not None:
            allowed = torch.as_tensor(mask).bool().expand(B, T, T)
            attn_mask = ~allowed.repeat_interleave(self.attn.num_heads, dim=0)
        h = self.norm1(x)
        a, _ = self.attn(h, h, h, attn_mask=attn_mask, need_weights=False)
        x = x + a
        return x + self.ff(self.norm2(x))
