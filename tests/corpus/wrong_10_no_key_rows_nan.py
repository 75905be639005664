# lesson: 10_flash_attention
# expect: wrong flash_attention masked-row-nan
# The running maximum is never guarded: a query with no key computes -inf - (-inf) = NaN.
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    scale = 1.0 / np.sqrt(q.shape[-1])
    m = np.full(q.shape[:-1], -np.inf)
    l = np.zeros(q.shape[:-1])
    acc = np.zeros(q.shape[:-1] + (v.shape[-1],))
    rows = np.arange(Lq)[:, None] + (Lk - Lq)
    for j in range(0, Lk, block_size):
        if causal and j > Lk - 1:
            break
        kb, vb = k[..., j:j + block_size, :], v[..., j:j + block_size, :]
        s = (q @ np.swapaxes(kb, -1, -2)) * scale
        if causal:
            s = np.where(np.arange(j, j + kb.shape[-2]) <= rows, s, -np.inf)
        m_new = np.maximum(m, s.max(-1))
        safe = m_new
        p = np.exp(s - safe[..., None])
        alpha = np.exp(m - safe)
        l = l * alpha + p.sum(-1)
        acc = acc * alpha[..., None] + p @ vb
        m = m_new
    return acc / l[..., None], m + np.log(l)
