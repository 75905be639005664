# lesson: 05_multi_head_attention
# source: hyunwoongko/transformer models/layers/multi_head_attention.py + models/layers/scale_dot_product_attention.py 63286547b9cd174a6cfc204832271814d685181f  (https://github.com/hyunwoongko/transformer/tree/63286547b9cd174a6cfc204832271814d685181f/models/layers)
# bug report: none (upstream's -10000 fill, from hyunwoongko/transformer@9c5515d, never meets a fully blocked row there)
# adapted: MultiHeadAttention(d_model, n_head) -> MultiHeadAttention(d_model, num_heads, dropout=0.0) (dropout
#   unused, as upstream has none); w_concat -> w_o; forward(q, k, v, mask) names -> query, key, value;
#   ScaleDotProductAttention inlined as a helper class in the same cell.
# expect: wrong MultiHeadAttention masked-row-leak -
# Also wrong, no catalogued id: no ValueError when d_model % num_heads != 0 (no check at all).
# %% MultiHeadAttention
class ScaleDotProductAttention(nn.Module):
    """
    compute scale dot product attention

    Query : given sentence that we focused on (decoder)
    Key : every sentence to check relationship with Query(encoder)
    Value : every sentence same with Key (encoder)
    """

    def __init__(self):
        super(ScaleDotProductAttention, self).__init__()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, q, k, v, mask=None, e=1e-12):
        # input is 4 dimension tensor
        # [batch_size, head, length, d_tensor]
        batch_size, head, length, d_tensor = k.size()

        # 1. dot product Query with Key^T to compute similarity
        k_t = k.transpose(2, 3)  # transpose
        score = (q @ k_t) / math.sqrt(d_tensor)  # scaled dot product

        # 2. apply masking (opt)
        if mask is not None:
            score = score.masked_fill(mask == 0, -10000)

        # 3. pass them softmax to make [0, 1] range
        score = self.softmax(score)

        # 4. multiply with Value
        v = score @ v

        return v, score


class MultiHeadAttention(nn.Module):

    def __init__(self, d_model, num_heads, dropout=0.0):
        super(MultiHeadAttention, self).__init__()
        self.n_head = num_heads
        self.attention = ScaleDotProductAttention()
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        # 1. dot product with weight matrices
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)

        # 2. split tensor by number of heads
        q, k, v = self.split(q), self.split(k), self.split(v)

        # 3. do scale dot product to compute similarity
        out, attention = self.attention(q, k, v, mask=mask)

        # 4. concat and pass to linear layer
        out = self.concat(out)
        out = self.w_o(out)

        return out

    def split(self, tensor):
        batch_size, length, d_model = tensor.size()

        d_tensor = d_model // self.n_head
        tensor = tensor.view(batch_size, length, self.n_head, d_tensor).transpose(1, 2)
        # it is similar with group convolution (split by number of heads)

        return tensor

    def concat(self, tensor):
        batch_size, head, length, d_tensor = tensor.size()
        d_model = head * d_tensor

        tensor = tensor.transpose(1, 2).contiguous().view(batch_size, length, d_model)
        return tensor
