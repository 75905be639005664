# lesson: 07_transformer_block
# expect: wrong positional_encoding pe-wrong-frequency
# The pair number i in the exponent where the formula has 2i: frequencies fall half as fast.
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pos = torch.arange(seq_len, dtype=torch.float64)[:, None]
    i = torch.arange(d_model // 2, dtype=torch.float64)[None, :]
    angles = pos / 10000 ** (i / d_model)
    pe = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).reshape(seq_len, d_model)
    return pe.float()
