# lesson: 07_transformer_block
# source: tests/degenerate.py (zeros): an answer that does nothing; it must score 0
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    return torch.zeros(seq_len, d_model)
