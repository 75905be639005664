# lesson: 10_flash_attention
# expect: wrong flash_attention materialises-scores
# Exact, but it builds the whole (Lq, Lk) score array at once: lesson 1's attention with an lse.
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.arange(Lk) <= np.arange(Lq)[:, None] + (Lk - Lq), s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)
    p = np.exp(s - m)
    total = p.sum(-1, keepdims=True)
    safe = np.where(total > 0, total, 1.0)
    out = np.where(total > 0, (p / safe) @ v, 0.0)
    lse = np.where(total > 0, m + np.log(safe), -np.inf)[..., 0]
    return out, lse
