# lesson: 07_transformer_block
# expect: wrong positional_encoding pe-sin-cos-swapped
# Cosine on the even features, sine on the odd ones.
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    pe = torch.empty(seq_len, d_model)
    pe[:, 0::2] = torch.cos(pos / freq)
    pe[:, 1::2] = torch.sin(pos / freq)
    return pe
