# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong flash_attention last-block-dropped
# The key loop ends at the last full block.
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk, dk = q.shape[-2], k.shape[-2], q.shape[-1]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.zeros(batch + (Lq, v.shape[-1]))
    lse = np.full(batch + (Lq,), -np.inf)
    scale = 1.0 / math.sqrt(dk)
    for i0 in range(0, Lq, block_size):
        i1 = min(i0 + block_size, Lq)
        qb = q[..., i0:i1, :]
        m = np.full(batch + (i1 - i0,), -np.inf)
        l = np.zeros(batch + (i1 - i0,))
        acc = np.zeros(batch + (i1 - i0, v.shape[-1]))
        for j0 in range(0, (Lk // block_size) * block_size, block_size):
            if causal and j0 > i1 - 1 + Lk - Lq:
                break
            j1 = min(j0 + block_size, Lk)
            s = qb @ np.swapaxes(k[..., j0:j1, :], -1, -2) * scale
            if causal:
                allowed = np.arange(j0, j1) <= np.arange(i0, i1)[:, None] + (Lk - Lq)
                s = np.where(allowed, s, -np.inf)
            m_new = np.maximum(m, s.max(axis=-1))
            shift = np.where(np.isfinite(m_new), m_new, 0.0)
            p = np.exp(s - shift[..., None])
            alpha = np.exp(m - shift)
            l = l * alpha + p.sum(axis=-1)
            acc = acc * alpha[..., None] + p @ v[..., j0:j1, :]
            m = m_new
        seen = l > 0
        out[..., i0:i1, :] = np.where(seen[..., None], acc / np.where(seen, l, 1.0)[..., None], 0.0)
        with np.errstate(divide="ignore"):
            lse[..., i0:i1] = np.where(seen, m + np.log(np.where(seen, l, 1.0)), -np.inf)
    return out, lse
