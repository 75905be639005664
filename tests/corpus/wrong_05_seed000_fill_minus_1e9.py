# lesson: 05_multi_head_attention
# source: ../shared/seeds/000_e650a81f74f40ffa.txt (the course's seed document: a blog post's "Python Implementation" of MultiHeadAttention)
# bug report: none; its -1e9 fill gives a fully blocked row uniform weights instead of zero weights
# adapted: nothing in the class; its Chinese comments are shortened to English and the demo under __main__ dropped.
#   It has no dropout argument and rejects d_model % num_heads != 0 with `assert`: both are accepted spellings
#   (tests/test_spellings.py checks that only the blocked-row check fails).
# expect: wrong MultiHeadAttention masked-row-leak
# %% MultiHeadAttention
import torch
import torch.nn as nn
import math

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super(MultiHeadAttention, self).__init__()
        assert d_model % num_heads == 0, "d_model must be divisible by num_heads"

        self.d_model = d_model
        self.num_heads = num_heads
        self.d_k = d_model // num_heads

        # W_q, W_k, W_v: one large linear layer each for all heads, split afterwards
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)

        # the output projection W_o
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        """
        Args:
            query, key, value: each (batch_size, seq_len, d_model)
            mask: (batch_size, 1, 1, seq_len) or similar (padding or look-ahead mask)
        """
        batch_size = query.size(0)

        # 1. linear projections: (batch, seq_len, d_model)
        Q = self.w_q(query)
        K = self.w_k(key)
        V = self.w_v(value)

        # 2. split heads: (batch, seq_len, d_model) -> (batch, num_heads, seq_len, d_k)
        Q = Q.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = K.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = V.view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)

        # 3. scaled dot-product attention: scores (batch, heads, seq_len_q, seq_len_k)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)

        if mask is not None:
            # fill masked positions (mask == 0) with a very negative number such as -1e9
            scores = scores.masked_fill(mask == 0, -1e9)

        attn_weights = torch.softmax(scores, dim=-1)

        # weighted sum: (batch, heads, seq_len, d_k)
        output = torch.matmul(attn_weights, V)

        # 4. concat heads and project: -> (batch, seq_len, d_model)
        output = output.transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)

        return self.w_o(output)
