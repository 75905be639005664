# lesson: 03_self_attention_head
# expect: correct
# Uses F.scaled_dot_product_attention (same mask convention), zeroing fully blocked rows itself.
# %% SelfAttentionHead
import torch.nn.functional as F

class SelfAttentionHead(nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_q, self.w_k, self.w_v = (nn.Linear(d_model, d_k) for _ in range(3))

    def forward(self, x, mask=None):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v)
        ok = torch.as_tensor(mask).bool().expand(x.shape[0], x.shape[1], x.shape[1])
        rows = ok.any(-1, keepdim=True)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=ok | ~rows)
        return out * rows
