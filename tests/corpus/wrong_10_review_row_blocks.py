# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong flash_attention -
# A plain softmax over one block of queries against every key: a (block, Lk) array, which grows with Lk.
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    outs, lses = [], []
    for i0 in range(0, Lq, block_size):
        i1 = min(i0 + block_size, Lq)
        s = q[..., i0:i1, :] @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])     # (..., block, Lk)
        if causal:
            s = np.where(np.arange(Lk) <= np.arange(i0, i1)[:, None] + (Lk - Lq), s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        e = np.exp(s - m)
        total = e.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            lses.append((m + np.log(total))[..., 0])
        outs.append(np.where(total > 0, (e / np.where(total > 0, total, 1.0)) @ v, 0.0))
    return np.concatenate(outs, axis=-2), np.concatenate(lses, axis=-1)
