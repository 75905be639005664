# lesson: 05_multi_head_attention
# expect: wrong merge_heads heads-mixed
# expect: full MultiHeadAttention
# The reference's MultiHeadAttention (the solution's cell) beside the merge_heads of wrong_05_merge_heads_no_transpose.py: MultiHeadAttention calls
# merge_heads, and is graded with the reference merge_heads in place of the wrong one (issue 32).
# The other helper, split_heads, is the solution's (a stub there takes a round of answers per call).
# %% merge_heads
def merge_heads(x):
    B, h, T, d = x.shape
    return x.reshape(B, T, h * d)
# %% split_heads
def split_heads(x, num_heads):
    """Split the features of every token into heads.

    Args:
        x: tensor of shape (B, T, d_model).
        num_heads: h; d_model must be divisible by h.

    Returns:
        Tensor of shape (B, h, T, d_model // h); out[b, i, t] is the i-th slice of size
        d_k = d_model // h of the features of token t.
    """
    B, T, d_model = x.shape
    return x.view(B, T, num_heads, d_model // num_heads).transpose(1, 2)  # (B, h, T, d_k)
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections (the course's conventions).

    Args:
        d_model: model width; must be divisible by num_heads (else ValueError).
        num_heads: number of heads h; each head has size d_k = d_model // h.
        dropout: probability of dropping attention weights (training mode only).

    Attributes:
        w_q, w_k, w_v, w_o: nn.Linear(d_model, d_model), with bias.

    forward(query, key, value, mask=None):
        query: (B, Lq, d_model); key, value: (B, Lk, d_model).
        mask: None or bool / 0-1 tensor broadcastable to (B, h, Lq, Lk); True/1 = may attend.
        Returns (B, Lq, d_model). Queries whose keys are all blocked read nothing.
    """

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        q = split_heads(self.w_q(query), self.num_heads)              # (B, h, Lq, d_k)
        k = split_heads(self.w_k(key), self.num_heads)                # (B, h, Lk, d_k)
        v = split_heads(self.w_v(value), self.num_heads)              # (B, h, Lk, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)        # (B, h, Lq, Lk)
        if mask is None:
            weights = torch.softmax(scores, dim=-1)                   # (B, h, Lq, Lk)
        else:
            allowed = torch.as_tensor(mask, device=scores.device).bool().expand_as(scores)
            has_key = allowed.any(dim=-1, keepdim=True)               # (B, h, Lq, 1)
            scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(~has_key, 0.0)
            weights = torch.softmax(scores, dim=-1).masked_fill(~has_key, 0.0)
        weights = self.dropout(weights)                               # active in training mode only
        return self.w_o(merge_heads(weights @ v))                     # (B, Lq, d_model)
