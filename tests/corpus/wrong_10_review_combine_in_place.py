# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong combine_attention input-modified
# The merge written into out1 in place (out1 *= ...).
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    lse = np.logaddexp(lse1, lse2)
    safe = np.where(np.isfinite(lse), lse, 0.0)
    out1 *= np.exp(lse1 - safe)[..., None]
    out1 += np.exp(lse2 - safe)[..., None] * out2
    return out1, lse
