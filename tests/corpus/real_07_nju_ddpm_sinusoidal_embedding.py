# lesson: 07_transformer_block
# source: NJU-AIA/Learning Diffusion/ddpm/utils.py a0204545cb2957f74c4f8122188db92deead584c
# adapted: sinusoidal_embedding(n, d) renamed to the contract's positional_encoding(seq_len, d_model).
# bug report: the frequencies are indexed by the feature j (1 / 10000^(2j/d) for j in range(d)), so feature 2i
# bug report: gets exponent 4i/d and its cosine partner (4i + 2)/d instead of both 2i/d; no ValueError for an
# bug report: odd d either.
# expect: wrong positional_encoding pe-wrong-frequency
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    n, d = seq_len, d_model
    embedding = torch.zeros(n, d)
    wk = torch.tensor([1 / 10_000 ** (2 * j / d) for j in range(d)]).reshape(1, d)
    t = torch.arange(n).reshape(n, 1)
    embedding[:, ::2] = torch.sin(t * wk[:, ::2])
    embedding[:, 1::2] = torch.cos(t * wk[:, 1::2])
    return embedding
