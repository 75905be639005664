# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: correct
# Each tile turned into (output, lse) and merged with combine_attention, the running pair kept in
# views of the output arrays.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    lse = np.logaddexp(lse1, lse2)
    safe = np.where(np.isfinite(lse), lse, 0.0)
    w1 = np.exp(lse1 - safe)
    w2 = np.exp(lse2 - safe)
    out = w1[..., None] * out1 + w2[..., None] * out2
    return out, lse
# %% flash_attention
def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.zeros(batch + (Lq, v.shape[-1]))
    lse = np.full(batch + (Lq,), -np.inf)
    for i0 in range(0, Lq, block_size):
        i1 = min(i0 + block_size, Lq)
        o_run, lse_run = out[..., i0:i1, :], lse[..., i0:i1]
        for j0 in range(0, Lk, block_size):
            if causal and j0 > i1 - 1 + Lk - Lq:
                break
            j1 = min(j0 + block_size, Lk)
            s = q[..., i0:i1, :] @ np.swapaxes(k[..., j0:j1, :], -1, -2) / math.sqrt(q.shape[-1])
            if causal:
                s = np.where(np.arange(j0, j1) <= np.arange(i0, i1)[:, None] + (Lk - Lq), s, -np.inf)
            m = s.max(axis=-1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0.0)
            p = np.exp(s - m)
            l = p.sum(axis=-1)
            tile_out = (p @ v[..., j0:j1, :]) / np.where(l > 0, l, 1.0)[..., None]
            with np.errstate(divide='ignore'):
                tile_lse = m[..., 0] + np.log(l)
            o_run, lse_run = combine_attention(o_run, lse_run, tile_out, tile_lse)
        out[..., i0:i1, :], lse[..., i0:i1] = o_run, lse_run
    return out, lse
