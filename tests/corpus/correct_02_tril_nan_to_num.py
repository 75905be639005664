# lesson: 02_masking
# expect: correct
# np.tril, a broadcast comparison, and a -inf mask whose NaN rows are zeroed afterwards.
# %% causal_mask
def causal_mask(seq_len):
    return np.tril(np.ones((seq_len, seq_len))).astype(bool)
# %% padding_mask
def padding_mask(lengths, max_len):
    return np.expand_dims(np.arange(max_len) < np.reshape(lengths, (-1, 1)), 1)
# %% scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = np.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
    w = np.nan_to_num(w, nan=0.0)
    return w @ v, w
