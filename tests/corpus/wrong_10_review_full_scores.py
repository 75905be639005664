# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong flash_attention materialises-scores
# The whole score array first, then the online softmax over its column blocks.
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    s_all = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s_all = np.where(np.arange(Lk) <= np.arange(Lq)[:, None] + (Lk - Lq), s_all, -np.inf)
    batch = s_all.shape[:-2]
    m = np.full(batch + (Lq,), -np.inf); l = np.zeros(batch + (Lq,)); acc = np.zeros(batch + (Lq, v.shape[-1]))
    for j0 in range(0, Lk, block_size):
        s = s_all[..., j0:j0 + block_size]
        m_new = np.maximum(m, s.max(axis=-1))
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        p = np.exp(s - shift[..., None]); alpha = np.exp(m - shift)
        l = l * alpha + p.sum(-1); acc = acc * alpha[..., None] + p @ v[..., j0:j0 + block_size, :]
        m = m_new
    seen = l > 0
    out = np.where(seen[..., None], acc / np.where(seen, l, 1.0)[..., None], 0.0)
    with np.errstate(divide="ignore"):
        lse = np.where(seen, m + np.log(np.where(seen, l, 1.0)), -np.inf)
    return out, lse
