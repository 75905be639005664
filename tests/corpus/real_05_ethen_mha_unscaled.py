# lesson: 05_multi_head_attention
# source: ethen8181/machine-learning deep_learning/seq2seq/torch_transformer.ipynb 38c82cf1990c3ba9972c8f11dcb350170f899ded  (https://github.com/ethen8181/machine-learning/blob/38c82cf1990c3ba9972c8f11dcb350170f899ded/deep_learning/seq2seq/torch_transformer.ipynb)
# bug report: ethen8181/machine-learning#13 ("it does not implement the scale ... the function should return linear_proj, not output")
# adapted: MultiHeadAttention(hid_dim, n_heads) -> MultiHeadAttention(d_model, num_heads, dropout=0.0) (dropout
#   unused, as upstream has none); query_weight/key_weight/value_weight/linear_weight -> w_q/w_k/w_v/w_o; returns
#   output only (the original returns (output, attention)).
# expect: wrong MultiHeadAttention missing-scale missing-output-projection masked-row-leak -
# Also wrong, no catalogued id: `assert` instead of ValueError when d_model % num_heads != 0.
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):

    def __init__(self, d_model, num_heads, dropout=0.0):
        super().__init__()
        self.hid_dim = d_model
        self.n_heads = num_heads
        self.head_dim = d_model // num_heads
        assert d_model % num_heads == 0

        self.w_k = nn.Linear(d_model, d_model)
        self.w_q = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask = None):
        batch_size = query.shape[0]
        query_len = query.shape[1]
        key_len = key.shape[1]

        # key/query/value (proj) = [batch size, input len, hid dim]
        key_proj = self.w_k(key)
        query_proj = self.w_q(query)
        value_proj = self.w_v(value)

        # compute the weights between query and key
        query_proj = query_proj.view(batch_size, query_len, self.n_heads, self.head_dim)
        query_proj = query_proj.permute(0, 2, 1, 3)
        key_proj = key_proj.view(batch_size, key_len, self.n_heads, self.head_dim)
        key_proj = key_proj.permute(0, 2, 3, 1)

        # energy, attention = [batch size, num heads, query len, key len]
        energy = torch.matmul(query_proj, key_proj)

        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)

        attention = torch.softmax(energy, dim=-1)

        # output = [batch size, num heads, query len, head dim]
        value_proj = value_proj.view(batch_size, key_len, self.n_heads, self.head_dim)
        value_proj = value_proj.permute(0, 2, 1, 3)
        output = torch.matmul(attention, value_proj)

        # linaer = [batch size, query len, hid dim]
        output = output.permute(0, 2, 1, 3).contiguous().view(batch_size, query_len, self.hid_dim)
        linear_proj = self.w_o(output)
        return output
