# lesson: 07_transformer_block
# source: seasa2016/code_test pytorch/encode_test.py 8ac8c3aec96c69c98a4ce2789fbfede28491a6fc
# adapted: the script's table in the contract's function (n_position -> seq_len, d_pos_vec -> d_model), returned
# adapted: as a float32 tensor.
# bug report: position 0 is left all zero (it was the padding position where this came from), so PE[0, 2i + 1]
# bug report: is 0 instead of cos(0) = 1; no ValueError for an odd d_model.
# expect: wrong positional_encoding -
# %% positional_encoding
def positional_encoding(seq_len, d_model):
    d_pos_vec, n_position = d_model, seq_len
    position_enc = np.array([
            [pos / np.power(10000, 2 * (j // 2) / d_pos_vec) for j in range(d_pos_vec)]
            if pos != 0 else np.zeros(d_pos_vec) for pos in range(n_position)])
    position_enc[1:, 0::2] = np.sin(position_enc[1:, 0::2]) # dim 2i
    position_enc[1:, 1::2] = np.cos(position_enc[1:, 1::2]) # dim 2i+1
    return torch.from_numpy(position_enc).float()
