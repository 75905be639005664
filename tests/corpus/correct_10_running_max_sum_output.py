# lesson: 10_flash_attention
# expect: correct
# The (max, sum, output) form of section 2, with key blocks over all the queries at once (tiles of
# (..., Lq, block)), normalised once at the end as FlashAttention-2 does; combine_attention with an
# explicit shared maximum instead of np.logaddexp.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    m = np.maximum(lse1, lse2)
    m = np.where(np.isneginf(m), 0.0, m)
    a, b = np.exp(lse1 - m), np.exp(lse2 - m)
    total = a + b
    safe = np.where(total > 0, total, 1.0)
    out = (a[..., None] * out1 + b[..., None] * out2) / safe[..., None]
    lse = np.where(total > 0, m + np.log(safe), -np.inf)
    return out, lse
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
        l = l * alpha + p.sum(-1)
        acc = acc * alpha[..., None] + p @ vb
        m = m_new
    has = l > 0
    out = np.where(has[..., None], acc / np.where(has, l, 1.0)[..., None], 0.0)
    lse = np.where(has, m + np.log(np.where(has, l, 1.0)), -np.inf)
    return out, lse
