# lesson: 02_masking
# source: graykode/nlp-tutorial 5-1.Transformer/Transformer.py d05e31ec81d56d70c1db89b99ab07e948f7ebc11  (https://github.com/graykode/nlp-tutorial/blob/d05e31ec81d56d70c1db89b99ab07e948f7ebc11/5-1.Transformer/Transformer.py)
# bug report: none
# adapted: get_attn_subsequent_mask(seq) -> causal_mask(seq_len): the shape [batch, len, len] read from a token batch
#   becomes [seq_len, seq_len]; the mask marks blocked pairs with 1 (np.triu(k=1)), so the result is turned into the
#   course's convention with `== 0`, which also replaces the torch .byte() conversion.
# expect: correct
# %% causal_mask
def causal_mask(seq_len):
    attn_shape = [seq_len, seq_len]
    subsequent_mask = np.triu(np.ones(attn_shape), k=1)
    return subsequent_mask == 0
