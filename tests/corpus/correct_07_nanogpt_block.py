# lesson: 07_transformer_block
# expect: correct
# source: karpathy/nanoGPT model.py 04a1d697ddc57aadb2edbe95816bf86c6b8918b0
# adapted: nanoGPT's pre-norm Block (`x = x + self.attn(self.ln_1(x))`, `x = x + self.mlp(self.ln_2(x))`)
# adapted: with ln_1/ln_2/mlp renamed norm1/norm2/ff, its CausalSelfAttention replaced by the contract's
# adapted: nn.MultiheadAttention (so a mask argument, converted to torch's convention), ReLU for GELU, and
# adapted: the MLP's dropout kept on the residual branch as in nanoGPT (resid_dropout).
# %% TransformerBlock
class TransformerBlock(nn.Module):

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, num_heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, d_ff), nn.ReLU(), nn.Linear(d_ff, d_model))
        self.resid_dropout = nn.Dropout(dropout)
        self.mlp_dropout = nn.Dropout(dropout)

    def _attn(self, x, mask):
        attn_mask = None
        if mask is not None:
            B, T, _ = x.shape
            attn_mask = (torch.as_tensor(mask) == 0).expand(B, T, T).repeat_interleave(self.attn.num_heads, 0)
        return self.resid_dropout(self.attn(x, x, x, attn_mask=attn_mask, need_weights=False)[0])

    def forward(self, x, mask=None):
        x = x + self._attn(self.norm1(x), mask)
        x = x + self.mlp_dropout(self.ff(self.norm2(x)))
        return x
