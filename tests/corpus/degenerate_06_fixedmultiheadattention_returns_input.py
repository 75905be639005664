# lesson: 06_debugging_projection_reuse
# source: tests/degenerate.py (returns-input): an answer that does nothing; it must score 0
# expect: wrong FixedMultiHeadAttention -
# %% FixedMultiHeadAttention
class FixedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.q_project = nn.Linear(d_model, d_model)
        self.k_project = nn.Linear(d_model, d_model)
        self.v_project = nn.Linear(d_model, d_model)
        self.o_project = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        return x.clone()
