# lesson: 03_self_attention_head
# source: karpathy/ng-video-lecture gpt.py 3fdc1ea02f3849fd4b3c093430bc49c6fd6a4feb  (https://github.com/karpathy/ng-video-lecture/blob/3fdc1ea02f3849fd4b3c093430bc49c6fd6a4feb/gpt.py)
# bug report: fixed upstream by karpathy/ng-video-lecture@988848a "scale by head size" (C**-0.5 -> k.shape[-1]**-0.5)
# adapted: Head(head_size) -> SelfAttentionHead(d_model, d_k) (the globals n_embd, head_size become the arguments);
#   key/query/value -> w_k/w_q/w_v; the causal `tril` buffer replaced by the `mask` argument with the same
#   `== 0` test (skipped when mask is None); the global dropout (0.2) set to 0.0, the signature has no dropout;
#   F imported in the cell (the lesson's setup does not import it).
# expect: wrong SelfAttentionHead wrong-scale masked-row-nan -
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
        B,T,C = x.shape
        k = self.w_k(x)   # (B,T,C)
        q = self.w_q(x) # (B,T,C)
        # compute attention scores ("affinities")
        wei = q @ k.transpose(-2,-1) * C**-0.5 # (B, T, C) @ (B, C, T) -> (B, T, T)
        if mask is not None:
            wei = wei.masked_fill(mask == 0, float('-inf')) # (B, T, T)
        wei = F.softmax(wei, dim=-1) # (B, T, T)
        wei = self.dropout(wei)
        # perform the weighted aggregation of the values
        v = self.w_v(x) # (B,T,C)
        out = wei @ v # (B, T, T) @ (B, T, C) -> (B, T, C)
        return out
