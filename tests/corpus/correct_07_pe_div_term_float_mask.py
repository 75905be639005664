# lesson: 07_transformer_block
# expect: correct
# The "div_term" form exp(-ln(10000) * 2i / d) in float32, and a block that turns the mask into an
# additive float mask of shape (B * h, T, T) with view/expand/reshape instead of repeat_interleave.
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2 != 0:
        raise ValueError(f"odd d_model {d_model}")
    position = torch.arange(seq_len).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe = torch.zeros(seq_len, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe

# %% TransformerBlock
class TransformerBlock(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        super().__init__()
        self.h = num_heads
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        B, T, _ = x.shape
        add = None
        if mask is not None:
            ok = torch.as_tensor(mask).bool().expand(B, T, T)
            add = torch.zeros(B, T, T).masked_fill(~ok, float("-inf"))
            add = add[:, None].expand(B, self.h, T, T).reshape(B * self.h, T, T)
        y = self.norm1(x)
        x = x + self.drop(self.attn(y, y, y, attn_mask=add)[0])
        return x + self.drop(self.ff(self.norm2(x)))
