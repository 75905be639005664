# lesson: 10_flash_attention
# expect: wrong flash_attention normalised-per-block
# Each block's softmax is taken alone and the blocks' outputs are added.
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    out = np.zeros(q.shape[:-1] + (v.shape[-1],))
    lse = np.full(q.shape[:-1], -np.inf)
    rows = np.arange(Lq)[:, None] + (Lk - Lq)
    for j in range(0, Lk, block_size):
        kb, vb = k[..., j:j + block_size, :], v[..., j:j + block_size, :]
        s = q @ np.swapaxes(kb, -1, -2) / np.sqrt(q.shape[-1])
        if causal:
            s = np.where(np.arange(j, j + kb.shape[-2]) <= rows, s, -np.inf)
        m = s.max(-1, keepdims=True)
        m = np.where(np.isneginf(m), 0.0, m)
        p = np.exp(s - m)
        total = p.sum(-1, keepdims=True)
        out = out + np.where(total > 0, p / np.where(total > 0, total, 1.0), 0.0) @ vb
        lse = np.logaddexp(lse, np.where(total[..., 0] > 0, m[..., 0] + np.log(np.where(total > 0, total, 1.0))[..., 0], -np.inf))
    return out, lse
