# lesson: 07_transformer_block
# expect: correct
# The formula written out with two Python loops, in float64 on purpose (math.sin), then converted.
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pe = torch.zeros(seq_len, d_model)
    for p in range(seq_len):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            pe[p, 2 * i] = math.sin(angle)
            pe[p, 2 * i + 1] = math.cos(angle)
    return pe
