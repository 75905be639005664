# lesson: 02_masking
# expect: wrong padding_mask padding-wrong-axis
# %% padding_mask
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    return (np.arange(max_len)[None, :] < lengths[:, None])[:, :, None]   # (batch, max_len, 1)
