# lesson: 07_transformer_block
# source: alrivero/TATER src/models/transformer/positional_embeddings/sinusoidalpositionalencoding.py 7f29f52c4f989570fce0f5b31e3307aeea8b452b
# adapted: the buffer its __init__ builds, as the contract's function (max_len -> seq_len); the learnable
# adapted: per-feature scale alpha and the forward that adds it to x are not part of the exercise.
# bug report: no ValueError for an odd d_model; the values are right.
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    max_len = seq_len
    pe = torch.zeros(max_len, d_model)
    pos = torch.arange(0, max_len).unsqueeze(1).float()
    div = torch.exp(torch.arange(0, d_model, 2).float()
                    * (-np.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe
