# lesson: 02_masking
# expect: correct
# masked_fill-style -1e9 fill, made safe by zeroing the fully blocked rows; padding by a loop.
# %% causal_mask
def causal_mask(seq_len):
    m = np.zeros((seq_len, seq_len), dtype=bool)
    for i in range(seq_len):
        m[i, : i + 1] = True
    return m
# %% padding_mask
def padding_mask(lengths, max_len):
    out = np.zeros((len(lengths), 1, max_len), dtype=bool)
    for b, n in enumerate(lengths):
        out[b, 0, :n] = True
    return out
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is None:
        w = softmax(scores)
    else:
        allowed = np.broadcast_to(np.asarray(mask) != 0, scores.shape)
        w = softmax(np.where(allowed, scores, -1e9)) * allowed.any(axis=-1, keepdims=True)
    return w @ v, w
