# lesson: 10_flash_attention
# source: course review, written to the lesson's contract
# expect: wrong combine_attention lse-unstable
# np.logaddexp, then exp(lse_i - lse) unguarded: two empty sets give NaN.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    lse = np.logaddexp(lse1, lse2)
    w1 = np.exp(lse1 - lse)
    w2 = np.exp(lse2 - lse)
    out = w1[..., None] * out1 + w2[..., None] * out2
    return out, lse
