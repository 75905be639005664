# lesson: 03_self_attention_head
# expect: wrong SelfAttentionHead wrong-scale -
# Written in the style of the single head of Karpathy's nanoGPT video (see real_03_ngvideo_head_c_scale), keeping
#   its `tril` buffer: the scores are scaled by C ** -0.5 with C = d_model; also, not catalogued: a causal mask is
#   always applied and the `mask` argument is ignored; no bias on the projections.
# %% SelfAttentionHead
import torch.nn.functional as F

class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k, block_size=64):
        super().__init__()
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_k, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x, mask=None):
        B, T, C = x.shape
        k, q = self.w_k(x), self.w_q(x)                                 # (B, T, d_k)
        wei = q @ k.transpose(-2, -1) * C ** -0.5                       # (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        return wei @ self.w_v(x)                                        # (B, T, d_k)
