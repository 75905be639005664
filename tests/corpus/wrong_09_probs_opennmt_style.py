# lesson: 09_generating_text
# Written for the course in the style of OpenNMT-py's sample_with_temperature (issue 32's hidden corpus): the
# logits divided by the temperature, then top-p applied on them, then top-k on the top-p logits, removed tokens
# filled with -10000. Where top_k and top_p are given together the top-p set is chosen before top-k; no
# catalogued id fits, and the feedback may say only what the answer was seen to equal (issue 32: never
# "top-k is applied to the probabilities after the softmax", which this code does not do).
# expect: wrong next_token_probs -
# %% next_token_probs
def sample_topp(logits, keep_topp):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True, dim=-1)
    cumulative_probs = torch.cumsum(torch.softmax(sorted_logits, dim=-1), dim=-1)
    sorted_indices_to_keep = cumulative_probs.lt(keep_topp)
    # keep indices until overflowing p
    cumsum_mask = sorted_indices_to_keep.cumsum(dim=-1)
    last_included = cumsum_mask[..., -1:].clamp(0, sorted_indices_to_keep.size(-1) - 1)
    sorted_indices_to_keep = sorted_indices_to_keep.scatter(-1, last_included, True)
    keep_indices = sorted_indices_to_keep.scatter(-1, sorted_indices, sorted_indices_to_keep)
    return logits.masked_fill(~keep_indices, -10000)


def sample_topk(logits, keep_topk):
    kth_best = torch.topk(logits, min(keep_topk, logits.shape[-1]), dim=-1).values[..., -1:]
    return logits.masked_fill(logits < kth_best, -10000)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    logits = torch.div(logits, temperature)
    if top_p is not None:
        logits = sample_topp(logits, top_p)
    if top_k is not None:
        logits = sample_topk(logits, top_k)
    return torch.softmax(logits, dim=-1)
