# lesson: 05_multi_head_attention
# expect: wrong split_heads heads-mixed
# expect: full MultiHeadAttention
# The reference's MultiHeadAttention (the solution's cell) beside the split_heads of wrong_05_split_heads_no_transpose.py: MultiHeadAttention calls
# split_heads, and is graded with the reference split_heads in place of the wrong one (issue 32).
# The other helper, merge_heads, is the solution's (a stub there takes a round of answers per call).
# %% split_heads
def split_heads(x, num_heads):
    B, T, D = x.shape
    return x.reshape(B, num_heads, T, D // num_heads)
# %% merge_heads
def merge_heads(x):
    """Concatenate the heads of every token: the inverse of split_heads.

    Args:
        x: tensor of shape (B, h, T, d_k).

    Returns:
        Tensor of shape (B, T, h * d_k) whose features for token t are
        [head 0 | head 1 | ... | head h-1] of token t.
    """
    B, h, T, d_k = x.shape
    return x.transpose(1, 2).reshape(B, T, h * d_k)  # (B, T, h * d_k)
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
