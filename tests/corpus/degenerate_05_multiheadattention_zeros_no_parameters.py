# lesson: 05_multi_head_attention
# source: tests/degenerate.py (zeros-no-parameters): an answer that does nothing; it must score 0
# expect: wrong MultiHeadAttention -
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()

    def forward(self, query, key, value, mask=None):
        return torch.zeros_like(query)
