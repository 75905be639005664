# lesson: 09_generating_text
# source: openai/gpt-2 src/sample.py 6c1f21d52e434bf13becdb8c9308014a771ba376  (https://github.com/openai/gpt-2/blob/6c1f21d52e434bf13becdb8c9308014a771ba376/src/sample.py)
# licence: Modified MIT
# bug report: none
# adapted: top_k_logits, top_p_logits and the sampling step of sample_sequence from TensorFlow to torch as the
#   contract's next_token_probs (tf.nn.top_k -> torch.topk, tf.sort -> torch.sort, tf.cumsum(exclusive=True) ->
#   cumsum - probs, tf.where -> torch.where, axis 1 -> -1 for leading axes), the softmax tf.multinomial samples
#   from returned; None for top_k/top_p mapped to GPT-2's 0 and 0.0, top_k capped at V (tf.nn.top_k refuses more);
#   added: the contract's ValueError for
#   temperature <= 0. Real behaviour kept: top-p when it is given, else top-k, never both; top-p keeps every
#   token whose logit is not below the smallest kept one (all of a tie), removed tokens filled with -1e10.
# expect: wrong next_token_probs -
# %% next_token_probs
def top_k_logits(logits, k):
    if k == 0:
        # no truncation
        return logits
    values, _ = torch.topk(logits, k=k)
    min_values = values[..., -1, None]
    return torch.where(logits < min_values, torch.ones_like(logits, dtype=logits.dtype) * -1e10, logits)


def top_p_logits(logits, p):
    logits_sort, _ = torch.sort(logits, descending=True)
    probs_sort = torch.softmax(logits_sort, dim=-1)
    probs_sums = torch.cumsum(probs_sort, dim=-1) - probs_sort
    logits_masked = torch.where(probs_sums < p, logits_sort, torch.ones_like(logits_sort) * 1000)
    min_logits = torch.amin(logits_masked, dim=-1, keepdim=True)
    return torch.where(logits < min_logits, torch.ones_like(logits, dtype=logits.dtype) * -1e10, logits)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    top_k = 0 if top_k is None else min(top_k, logits.shape[-1])
    top_p = 0.0 if top_p is None else top_p
    logits = logits / float(temperature)
    if top_p > 0.0:
        logits = top_p_logits(logits, p=top_p)
    else:
        logits = top_k_logits(logits, k=top_k)
    return torch.softmax(logits, dim=-1)
