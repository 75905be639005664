# lesson: 07_transformer_block
# source: poetrilin/ai_2024_USTC part_2/README.md 5bbc15c46a59f10e29fe577cffb325f28448b8ff
# adapted: the README's code block in the contract's function (dim_embed -> d_model); its .unsqueeze(1)
# adapted: batch axis and requires_grad_(False) left out, since the contract returns (seq_len, d_model).
# bug report: no ValueError for an odd d_model; the values are right.
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    dim_embed = d_model
    encodings = torch.zeros(seq_len, dim_embed)
    position = torch.arange(0, seq_len, dtype=torch.float32).unsqueeze(1)
    two_i = torch.arange(0, dim_embed, 2, dtype=torch.float32)  # 0, 2, 4, 6, 8, ..., 2*dim_embed
    div_term = torch.exp(two_i*(-math.log(10000.0)/dim_embed)) # 10000^{2i/d_{model}}
    encodings[:, 0::2] = torch.sin(position*div_term)
    encodings[:, 1::2] = torch.cos(position*div_term)
    return encodings
