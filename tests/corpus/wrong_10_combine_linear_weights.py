# lesson: 10_flash_attention
# expect: wrong combine_attention combine-linear-weights
# The partial outputs weighted by their lse, as if lse were a count of keys.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    m = np.maximum(lse1, lse2)
    m = np.where(np.isneginf(m), 0.0, m)
    a, b = np.exp(lse1 - m), np.exp(lse2 - m)
    total = a + b
    safe = np.where(total > 0, total, 1.0)
    out = (lse1[..., None] * out1 + lse2[..., None] * out2) / (lse1 + lse2)[..., None]
    lse = np.where(total > 0, m + np.log(safe), -np.inf)
    return out, lse
