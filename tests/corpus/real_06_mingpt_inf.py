# lesson: 06_debugging_projection_reuse
# source: karpathy/minGPT mingpt/model.py 38d7327dfdb671040b55624a90f92d2cfc54ff37  (https://github.com/karpathy/minGPT/blob/38d7327dfdb671040b55624a90f92d2cfc54ff37/mingpt/model.py)
# bug report: none (upstream the causal mask never blocks a whole row, so -inf never meets an all-blocked row)
# adapted: CausalSelfAttention(config) -> FixedMultiHeadAttention(d_model, num_heads, dropout) (attn_pdrop =
#   resid_pdrop = dropout); key/query/value/proj -> k_project/q_project/v_project/o_project; the causal `mask`
#   buffer replaced by attn_mask[:, None] (skipped when None), same `== 0` test.
# expect: wrong FixedMultiHeadAttention masked-row-nan dropout-on-output
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(nn.Module):
    """
    A vanilla multi-head masked self-attention layer with a projection at the end.
    I believe I could have just used torch.nn.MultiheadAttention but their documentation
    is all but absent and code ugly so I don't trust it, rolling my own here.
    """

    def __init__(self, d_model, num_heads, dropout):
        super().__init__()
        assert d_model % num_heads == 0
        # key, query, value projections for all heads
        self.k_project = nn.Linear(d_model, d_model)
        self.q_project = nn.Linear(d_model, d_model)
        self.v_project = nn.Linear(d_model, d_model)
        # regularization
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        # output projection
        self.o_project = nn.Linear(d_model, d_model)
        self.n_head = num_heads

    def forward(self, x, attn_mask=None):
        B, T, C = x.size()

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        k = self.k_project(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        q = self.q_project(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)
        v = self.v_project(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2) # (B, nh, T, hs)

        # causal self-attention; Self-attend: (B, nh, T, hs) x (B, nh, hs, T) -> (B, nh, T, T)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if attn_mask is not None:
            att = att.masked_fill(attn_mask[:, None] == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        att = self.attn_drop(att)
        y = att @ v # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C) # re-assemble all head outputs side by side

        # output projection
        y = self.resid_drop(self.o_project(y))
        return y
