# lesson: 05_multi_head_attention
# source: CyberZHG/torch-multi-head-attention torch_multi_head_attention/multi_head_attention.py 66f6ae801a6d2aea8994ef00af06fdfc67ec2026  (https://github.com/CyberZHG/torch-multi-head-attention/blob/66f6ae801a6d2aea8994ef00af06fdfc67ec2026/torch_multi_head_attention/multi_head_attention.py)
# bug report: none found
# adapted: MultiHeadAttention(in_features, head_num, bias=True, activation=F.relu) -> MultiHeadAttention(d_model,
#   num_heads, dropout=0.0) (bias and activation keep their defaults; dropout unused, as upstream has none);
#   linear_q/k/v/o -> w_q/w_k/w_v/w_o; forward(q, k, v, mask) names -> query, key, value; F imported in the cell.
#   Mask: the original takes (B, Lq, Lk) masks; one added line expands the course's mask to that shape.
# expect: wrong MultiHeadAttention masked-row-leak mask-misbroadcast -
# Also wrong, no catalogued id: ReLU after every projection, the output projection included (activation=F.relu).
#   The misbroadcast: heads are flattened batch-major (index b * h + i) but the mask is tiled with
#   mask.repeat(head_num, 1, 1) (index i * B + b), so head i of sequence b reads the mask of sequence (b*h+i) % B.
# %% MultiHeadAttention
import torch.nn.functional as F


class ScaledDotProductAttention(nn.Module):

    def forward(self, query, key, value, mask=None):
        dk = query.size()[-1]
        scores = query.matmul(key.transpose(-2, -1)) / math.sqrt(dk)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention = F.softmax(scores, dim=-1)
        return attention.matmul(value)


class MultiHeadAttention(nn.Module):

    def __init__(self,
                 d_model,
                 num_heads,
                 dropout=0.0,
                 bias=True,
                 activation=F.relu):
        super(MultiHeadAttention, self).__init__()
        if d_model % num_heads != 0:
            raise ValueError('`in_features`({}) should be divisible by `head_num`({})'.format(d_model, num_heads))
        self.in_features = d_model
        self.head_num = num_heads
        self.activation = activation
        self.bias = bias
        self.w_q = nn.Linear(d_model, d_model, bias)
        self.w_k = nn.Linear(d_model, d_model, bias)
        self.w_v = nn.Linear(d_model, d_model, bias)
        self.w_o = nn.Linear(d_model, d_model, bias)

    def forward(self, query, key, value, mask=None):
        if mask is not None:  # adapted: the course's mask, expanded to the original's (B, Lq, Lk)
            mask = torch.as_tensor(mask).expand(query.shape[0], 1, query.shape[1], key.shape[1])[:, 0]
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        if self.activation is not None:
            q = self.activation(q)
            k = self.activation(k)
            v = self.activation(v)

        q = self._reshape_to_batches(q)
        k = self._reshape_to_batches(k)
        v = self._reshape_to_batches(v)
        if mask is not None:
            mask = mask.repeat(self.head_num, 1, 1)
        y = ScaledDotProductAttention()(q, k, v, mask)
        y = self._reshape_from_batches(y)

        y = self.w_o(y)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def _reshape_to_batches(self, x):
        batch_size, seq_len, in_feature = x.size()
        sub_dim = in_feature // self.head_num
        return x.reshape(batch_size, seq_len, self.head_num, sub_dim)\
                .permute(0, 2, 1, 3)\
                .reshape(batch_size * self.head_num, seq_len, sub_dim)

    def _reshape_from_batches(self, x):
        batch_size, seq_len, in_feature = x.size()
        batch_size //= self.head_num
        out_dim = in_feature * self.head_num
        return x.reshape(batch_size, self.head_num, seq_len, in_feature)\
                .permute(0, 2, 1, 3)\
                .reshape(batch_size, seq_len, out_dim)
