# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong combine_attention lse-unstable
# Weights exp(lse_i) with no shared maximum: inf / inf at lse = 1e4.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    e1, e2 = np.exp(lse1), np.exp(lse2)
    lse = np.log(e1 + e2)
    out = (e1[..., None] * out1 + e2[..., None] * out2) / (e1 + e2)[..., None]
    return out, lse
