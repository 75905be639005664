# lesson: 07_transformer_block
# source: takahashiuhiro/OwaranaiEngine test.py 17705c1ecfaf2137f4a399814c7bd08915d6b102
# adapted: the module-level script wrapped in the contract's function (max_len -> seq_len); its (max_len, 1,
# adapted: d_model) buffer squeezed to (seq_len, d_model).
# bug report: no ValueError for an odd d_model (a RuntimeError from the shapes instead); the values are right.
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    max_len = seq_len
    position = torch.arange(max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, 1, d_model)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    return pe[:, 0]
