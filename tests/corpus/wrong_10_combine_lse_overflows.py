# lesson: 10_flash_attention
# expect: wrong combine_attention lse-unstable
# exp(lse) with no maximum taken out, for the weights and the lse: inf / inf at lse = 1e4.
# %% combine_attention
def combine_attention(out1, lse1, out2, lse2):
    a, b = np.exp(lse1), np.exp(lse2)
    total = a + b
    out = (a[..., None] * out1 + b[..., None] * out2) / total[..., None]
    return out, np.log(total)
