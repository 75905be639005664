# lesson: 10_flash_attention
# expect: wrong flash_attention running-sum-not-rescaled
# The running sum keeps its old scale when a block raises the maximum.
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
        safe = np.where(np.isneginf(m_new), 0.0, m_new)
        p = np.exp(s - safe[..., None])
        alpha = np.exp(m - safe)
        l = l + p.sum(-1)
        acc = acc * alpha[..., None] + p @ vb
        m = m_new
    has = l > 0
    out = np.where(has[..., None], acc / np.where(has, l, 1.0)[..., None], 0.0)
    lse = np.where(has, m + np.log(np.where(has, l, 1.0)), -np.inf)
    return out, lse
