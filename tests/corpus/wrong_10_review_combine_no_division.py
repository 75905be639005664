# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong combine_attention -
# A shared maximum, but the weights are not divided by w1 + w2.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    m = np.maximum(lse1, lse2)
    m = np.where(np.isfinite(m), m, 0.0)
    w1, w2 = np.exp(lse1 - m), np.exp(lse2 - m)
    lse = m + np.log(w1 + w2)
    out = w1[..., None] * out1 + w2[..., None] * out2          # forgot to divide by w1 + w2
    return out, lse
