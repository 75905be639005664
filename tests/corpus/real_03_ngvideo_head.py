# lesson: 03_self_attention_head
# source: karpathy/ng-video-lecture gpt.py 52201428ed7b46804849dea0b3ccf0de9df1a5c3  (https://github.com/karpathy/ng-video-lecture/blob/52201428ed7b46804849dea0b3ccf0de9df1a5c3/gpt.py)
# bug report: none (the -inf fill is harmless upstream, where the causal mask never blocks a whole row)
# adapted: Head(head_size) -> SelfAttentionHead(d_model, d_k); key/query/value -> w_k/w_q/w_v; the causal `tril`
#   buffer replaced by the `mask` argument with the same `== 0` test (skipped when mask is None); the global
#   dropout (0.2) set to 0.0, the signature has no dropout; F imported in the cell.
# expect: wrong SelfAttentionHead masked-row-nan -
# Also wrong, no catalogued id: the projections have no bias (bias=False).
# %% SelfAttentionHead
import torch.nn.functional as F

class SelfAttentionHead(nn.Module):
    """ one head of self-attention """

    def __init__(self, d_model, d_k):
        super().__init__()
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_k, bias=False)

        self.dropout = nn.Dropout(0.0)

    def forward(self, x, mask=None):
        # input of size (batch, time-step, channels)
        # output of size (batch, time-step, head size)
        B,T,C = x.shape
        k = self.w_k(x)   # (B,T,hs)
        q = self.w_q(x) # (B,T,hs)
        # compute attention scores ("affinities")
        wei = q @ k.transpose(-2,-1) * k.shape[-1]**-0.5 # (B, T, hs) @ (B, hs, T) -> (B, T, T)
        if mask is not None:
            wei = wei.masked_fill(mask == 0, float('-inf')) # (B, T, T)
        wei = F.softmax(wei, dim=-1) # (B, T, T)
        wei = self.dropout(wei)
        # perform the weighted aggregation of the values
        v = self.w_v(x) # (B,T,hs)
        out = wei @ v # (B, T, T) @ (B, T, hs) -> (B, T, hs)
        return out
