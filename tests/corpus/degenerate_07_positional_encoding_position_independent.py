# lesson: 07_transformer_block
# source: tests/degenerate.py (position-independent): an answer that does nothing; it must score 0
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    row = torch.zeros(d_model)
    row[1::2] = 1.0
    return row.expand(seq_len, d_model).clone()
