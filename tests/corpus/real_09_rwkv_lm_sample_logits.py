# lesson: 09_generating_text
# source: BlinkDL/RWKV-LM RWKV-v4/src/utils.py 13bb64100768bf9a8f14cd24809314f3a0c75191  (https://github.com/BlinkDL/RWKV-LM/blob/13bb64100768bf9a8f14cd24809314f3a0c75191/RWKV-v4/src/utils.py)
# licence: Apache-2.0
# bug report: none
# adapted: TOKENIZER.sample_logits(out, x, ctx_len, temperature, top_p_usual, top_p_newline) as the contract's
#   next_token_probs: the distribution torch.multinomial draws from returned (normalised, as multinomial
#   normalises it) instead of the token, for each row of logits with leading axes; the newline/character-mode
#   choice of top_p dropped (top_p_usual = top_p; the cutoff skipped when top_p is None; RWKV has no top-k, so
#   top_k is unused); the contract's ValueError for temperature <= 0 added. Real behaviour kept: the top-p cutoff
#   is chosen on the softmax of the raw logits and the temperature applied after it, as probs ** (1 / temperature);
#   every token tied with the cutoff probability is kept; top_p = 1 keeps only the most likely token (no running
#   total is above 1, and np.argmax of all False is 0).
# expect: wrong next_token_probs top-p-before-temperature
# %% next_token_probs
def sample_logits(out, temperature=1.0, top_p_usual=None):
    probs = F.softmax(torch.tensor(out), dim=-1)
    top_p = top_p_usual
    sorted_probs, s_index = torch.sort(probs, descending=True)
    if top_p is not None:
        cumulative_probs = torch.cumsum(sorted_probs, dim=-1).numpy()
        cutoff = float(sorted_probs[np.argmax(cumulative_probs > top_p)])
        probs[probs < cutoff] = 0
    if temperature != 1.0:
        probs = probs.pow(1.0 / temperature)
    return probs / probs.sum()


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    rows = logits.detach().reshape(-1, logits.shape[-1])
    out = torch.stack([sample_logits(row.numpy(), temperature, top_p) for row in rows])
    return out.reshape(logits.shape).to(logits.dtype)
