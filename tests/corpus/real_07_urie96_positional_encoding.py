# lesson: 07_transformer_block
# source: Urie96/learn-llm position_embedding.py 13786589413c045680584de17ae25b5c784ae53b
# adapted: taken as it is (its function already has the contract's name and arguments).
# bug report: an odd d_model raises RuntimeError from the shape mismatch of pe[:, 1::2], not the ValueError
# bug report: the contract asks for; every value is right.
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(max_len, d_model):
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)  # even features
    pe[:, 1::2] = torch.cos(position * div_term)  # odd features
    return pe
