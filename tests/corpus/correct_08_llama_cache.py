# lesson: 08_fast_attention
# expect: correct
# source: meta-llama/llama3 llama/model.py 453ae54806ac9bd4ea793dfecd2b2f27ece5f9cf
# adapted: Llama's Attention.forward and the mask built in Transformer.forward (zeros over the cache_len
# adapted: cached keys, then triu(-inf, diagonal=1) over the new ones, added to the scores). Its
# adapted: preallocated cache_k/cache_v written at start_pos became the contract's (k, v) tuple, extended
# adapted: with torch.cat (start_pos = T_past); wq/wk/wv/wo renamed w_q/w_k/w_v/w_o, with bias; no rotary
# adapted: embedding and no model parallelism; its (bs, slen, heads, head_dim) cache layout transposed to
# adapted: the contract's (B, h_kv, T, d_k).
# %% repeat_kv
def repeat_kv(x, n_rep):
    return torch.repeat_interleave(x, dim=1, repeats=n_rep)

# %% CausalSelfAttention
class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads=None):
        super().__init__()
        self.n_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model % num_heads or num_heads % self.n_kv_heads:
            raise ValueError("num_heads must divide d_model and num_kv_heads must divide num_heads")
        self.n_local_heads = num_heads
        self.n_rep = num_heads // self.n_kv_heads
        self.head_dim = d_model // num_heads
        self.w_q = nn.Linear(d_model, num_heads * self.head_dim)
        self.w_k = nn.Linear(d_model, self.n_kv_heads * self.head_dim)
        self.w_v = nn.Linear(d_model, self.n_kv_heads * self.head_dim)
        self.w_o = nn.Linear(num_heads * self.head_dim, d_model)

    def forward(self, x, cache=None):
        bsz, seqlen, _ = x.shape
        start_pos = 0 if cache is None else cache[0].shape[2]
        xq = self.w_q(x).view(bsz, seqlen, self.n_local_heads, self.head_dim)
        xk = self.w_k(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        xv = self.w_v(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim).transpose(1, 2)
        keys = xk if cache is None else torch.cat([cache[0], xk], dim=2)
        values = xv if cache is None else torch.cat([cache[1], xv], dim=2)

        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"))
            mask = torch.triu(mask, diagonal=1)
            # row i is token start_pos + i: it may read every cached key
            mask = torch.hstack([torch.zeros((seqlen, start_pos)), mask]).type_as(x)

        xq = xq.transpose(1, 2)
        scores = torch.matmul(xq, repeat_kv(keys, self.n_rep).transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, repeat_kv(values, self.n_rep))
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.w_o(output), (keys, values)
