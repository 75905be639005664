# lesson: 05_multi_head_attention
# source: hyunwoongko/transformer models/layers/multi_head_attention.py + models/layers/scale_dot_product_attention.py c19810c4d3efaf8413388aed16847fb9a3bdae65  (https://github.com/hyunwoongko/transformer/tree/c19810c4d3efaf8413388aed16847fb9a3bdae65/models/layers)
# bug report: fixed upstream over four commits: 91368af "add linaer layer at multihead attention", ee92100 "change
#   scale factor d_model -> d_k", 391c9cd "modify transpose" (split/concat/k_t/softmax dim), 9c5515d (mask fill -e -> -10000)
# adapted: MultiHeadAttention(d_model, n_head) -> MultiHeadAttention(d_model, num_heads, dropout=0.0);
#   forward(q, k, v, mask) names -> query, key, value; ScaleDotProductAttention inlined in the same cell. There is
#   no w_o: the first version has no output projection.
# expect: wrong MultiHeadAttention missing-output-projection wrong-scale heads-mixed softmax-wrong-axis -
# Also wrong, no catalogued id: keys "transposed" with view (k.view(B, h, d, T)); the mask fill is -1e-12, so the
#   mask has no effect; nn.Softmax() with no dim normalises over dim 1, the head axis; no ValueError check.
# %% MultiHeadAttention
class ScaleDotProductAttention(nn.Module):
    """
    compute scale dot product attention

    Query : given sentence that we focused on (decoder)
    Key : every sentence to check relationship with Qeury(encoder)
    Value : every sentence same with Key (encoder)
    """

    def __init__(self):
        super(ScaleDotProductAttention, self).__init__()
        self.softmax = nn.Softmax()
        self.dropout = nn.Dropout()

    def forward(self, q, k, v, mask=None, e=1e-12):
        # input is 4 dimension tensor
        # [batch_size, head, length, d_tensor]
        batch_size, head, length, d_tensor = k.size()
        d_model = head * d_tensor

        # 1. dot product Query with Key^T to compute similarity
        k_t = k.view(batch_size, head, d_tensor, length)
        score = (q @ k_t) / math.sqrt(d_model)

        # 2. apply masking (opt)
        if mask is not None: score = score.masked_fill(mask == 0, -e)

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

    def forward(self, query, key, value, mask=None):
        # 1. dot product with weight matrices
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)

        # 2. split tensor by number of heads
        q, k, v = self.project(q), self.project(k), self.project(v)

        # 3, do scale dot product to compute similarity

        out, attention = self.attention(q, k, v, mask=mask)
        out = self.concat(out)

        # 4. visualize attention map
        # TODO : we should implement visualization

        return out

    def project(self, tensor):
        batch_size, length, d_model = tensor.size()

        d_tensor = d_model // self.n_head
        tensor = tensor.view(batch_size, self.n_head, length, d_tensor)
        # it is similar with group convolution (split by number of heads)

        return tensor

    def concat(self, tensor):
        batch_size, head, length, d_tensor = tensor.size()
        d_model = head * d_tensor

        tensor = tensor.view(batch_size, length, d_model)
        return tensor
