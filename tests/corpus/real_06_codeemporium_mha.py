# lesson: 06_debugging_projection_reuse
# source: andyluken/transformers "Multihead _Attention.py" f8a45f887ee3dac33ed972c3364840a28aaae481  (https://github.com/andyluken/transformers/blob/f8a45f887ee3dac33ed972c3364840a28aaae481/Multihead%20_Attention.py)
#   (a copy of the code of the CodeEmporium "Transformer from scratch" video series)
# bug report: none found
# adapted: MultiheadAttention(input_dim, d_model, num_heads) -> FixedMultiHeadAttention(d_model, num_heads, dropout)
#   (input_dim = d_model; dropout unused, as upstream has none); Linear_layer -> o_project. The fused
#   qkv_layer + reshape(B, T, h, 3 * head_dim) + chunk (a learned per-head layout) becomes q_project/k_project/
#   v_project, each reshaped to (B, T, h, head_dim) and permuted the same way. The additive mask (0 = attend,
#   -inf = blocked) is built from attn_mask; the print() calls are dropped.
# expect: wrong FixedMultiHeadAttention heads-mixed masked-row-nan
# %% FixedMultiHeadAttention
def scaled_dot_product(q, k, v, mask=None):
    d_k = q.size()[-1]
    scaled = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scaled += mask
    attention = F.softmax(scaled, dim=-1)
    values = torch.matmul(attention, v)

    return values, attention

class FixedMultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout):
        super().__init__()
        self.input_dim = d_model
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads
        self.q_project = nn.Linear(d_model, d_model)
        self.k_project = nn.Linear(d_model, d_model)
        self.v_project = nn.Linear(d_model, d_model)
        self.o_project = nn.Linear(d_model, d_model)

    def forward(self, x, attn_mask=None):
        batch_size, sequence_length, input_dim = x.size()
        q = self.q_project(x).reshape(batch_size, sequence_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        k = self.k_project(x).reshape(batch_size, sequence_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        v = self.v_project(x).reshape(batch_size, sequence_length, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
        mask = None
        if attn_mask is not None:  # adapted: additive mask, as upstream builds it (0 = attend, -inf = blocked)
            mask = torch.zeros(attn_mask.shape).masked_fill(attn_mask == 0, float("-inf"))[:, None]
        values, attention = scaled_dot_product(q, k, v, mask)
        values = values.reshape(batch_size, sequence_length, self.num_heads * self.head_dim)
        out = self.o_project(values)

        return out
