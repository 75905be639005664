# lesson: 05_multi_head_attention
# source: aladdinpersson/Machine-Learning-Collection ML/Pytorch/more_advanced/transformer_from_scratch/transformer_from_scratch.py 3b8992fe274f31df61464fc127cde9ffb34896e7  (https://github.com/aladdinpersson/Machine-Learning-Collection/blob/3b8992fe274f31df61464fc127cde9ffb34896e7/ML/Pytorch/more_advanced/transformer_from_scratch/transformer_from_scratch.py)
# bug report: aladdinpersson/Machine-Learning-Collection#30 and #159 (divides by sqrt(embed_size), not sqrt(head_dim));
#   #3 (one Linear(head_dim, head_dim) shared by every head instead of learned d_model -> d_model projections)
# adapted: SelfAttention(embed_size, heads) -> MultiHeadAttention(d_model, num_heads, dropout=0.0) (dropout unused,
#   as upstream has none); queries/keys/values/fc_out -> w_q/w_k/w_v/w_o; forward(values, keys, query, mask) ->
#   forward(query, key, value, mask=None) (same roles, the contract's order).
# expect: wrong MultiHeadAttention wrong-scale masked-row-leak -
# Also wrong, no catalogued id: w_q, w_k, w_v are Linear(head_dim, head_dim) without bias, applied to every head
#   after the split (one small projection shared by all heads); `assert` instead of ValueError.
# %% MultiHeadAttention
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0):
        super(MultiHeadAttention, self).__init__()
        self.embed_size = d_model
        self.heads = num_heads
        self.head_dim = d_model // num_heads

        assert (
            self.head_dim * num_heads == d_model
        ), "Embedding size needs to be divisible by heads"

        self.w_v = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.w_k = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.w_q = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.w_o = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, query, key, value, mask=None):
        values, keys = value, key
        # Get number of training examples
        N = query.shape[0]

        value_len, key_len, query_len = values.shape[1], keys.shape[1], query.shape[1]

        # Split the embedding into self.heads different pieces
        values = values.reshape(N, value_len, self.heads, self.head_dim)
        keys = keys.reshape(N, key_len, self.heads, self.head_dim)
        query = query.reshape(N, query_len, self.heads, self.head_dim)

        values = self.w_v(values)  # (N, value_len, heads, head_dim)
        keys = self.w_k(keys)  # (N, key_len, heads, head_dim)
        queries = self.w_q(query)  # (N, query_len, heads, heads_dim)

        # Einsum does matrix mult. for query*keys for each training example
        # with every other training example, don't be confused by einsum
        # it's just how I like doing matrix multiplication & bmm

        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        # energy: (N, heads, query_len, key_len)

        # Mask padded indices so their weights become 0
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))

        # Normalize energy values similarly to seq2seq + attention
        # so that they sum to 1. Also divide by scaling factor for
        # better stability
        attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)
        # attention shape: (N, heads, query_len, key_len)

        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(
            N, query_len, self.heads * self.head_dim
        )
        # out after matrix multiply: (N, query_len, heads, head_dim), then
        # we reshape and flatten the last two dimensions.

        out = self.w_o(out)
        # Linear layer doesn't modify the shape, final shape will be
        # (N, query_len, embed_size)

        return out
