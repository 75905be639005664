# lesson: 07_transformer_block
# expect: wrong positional_encoding pe-concatenated
# The sines in the first half of the features and the cosines in the second.
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
    div = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    return torch.cat([torch.sin(pos * div), torch.cos(pos * div)], dim=-1)
