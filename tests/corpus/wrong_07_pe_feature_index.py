# lesson: 07_transformer_block
# expect: wrong positional_encoding pe-wrong-frequency
# One loop over the features with the feature's own index in the exponent: the cosine of each pair
# gets the frequency of feature 2i+1 instead of sharing its sine's.
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pe = torch.zeros(seq_len, d_model)
    for p in range(seq_len):
        for j in range(d_model):
            angle = p / (10000 ** (j / d_model))
            pe[p, j] = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return pe
