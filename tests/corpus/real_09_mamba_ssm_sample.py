# lesson: 09_generating_text
# source: state-spaces/mamba mamba_ssm/utils/generation.py 2430b17f7a32b275b071becede9cc71911080cdb  (https://github.com/state-spaces/mamba/blob/2430b17f7a32b275b071becede9cc71911080cdb/mamba_ssm/utils/generation.py)
# licence: Apache-2.0
# bug report: none
# adapted: sample(logits, top_k, top_p, min_p, temperature) as the contract's next_token_probs: the distribution
#   torch.multinomial draws from returned (scattered back to token order where mamba samples among torch.topk's
#   indices; one-hot for its top_k == 1 argmax) instead of the token; None for top_k/top_p mapped to mamba's 0 and
#   0.0 (its "no limit"); logits with leading axes flattened to the (batch, vocab) mamba expects and reshaped back;
#   min_p left at 0; the contract's ValueError for temperature <= 0 added. Real behaviour kept: exactly top_k
#   tokens kept (torch.topk's k indices: tokens tied with the k-th dropped), the temperature applied to those k
#   logits, and top-p chosen on an ascending sort, removing tokens while the running total is <= 1 - top_p (so of
#   tokens with equal probability the higher index is kept first).
# expect: wrong next_token_probs top-k-ties-dropped top-p-tie-order
# %% next_token_probs
def modify_logits_for_top_p_filtering(logits, top_p):
    """Set the logits for none top-p values to -inf. Done in-place."""
    if top_p <= 0.0 or top_p >= 1.0:
        return
    # First sort and calculate cumulative sum of probabilities.
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    # scatter sorted tensors to original indexing
    indices_to_remove = sorted_indices_to_remove.scatter(
        1, sorted_indices, sorted_indices_to_remove
    )
    logits.masked_fill_(indices_to_remove, float("-inf"))


def sample(logits, top_k=1, top_p=0.0, min_p=0.0, temperature=1.0):
    if top_k == 1:  # Short-circuit for greedy decoding
        return torch.nn.functional.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    else:
        if top_p > 0.0:
            assert top_p <= 1.0, "top-p should be in (0, 1]."
        if top_k > 0:
            top_k = min(top_k, logits.size(-1))  # Safety check
            logits_top, indices = torch.topk(logits, top_k, dim=-1)
            if temperature != 1.0:
                logits_top /= temperature
            modify_logits_for_top_p_filtering(logits_top, top_p)
            return torch.zeros_like(logits).scatter(-1, indices, torch.softmax(logits_top, dim=-1))
        else:
            # Clone so that when we modify for top_p we don't change the original logits
            logits_top = logits / temperature if temperature != 1.0 else logits.clone()
            modify_logits_for_top_p_filtering(logits_top, top_p)
            return torch.softmax(logits_top, dim=-1)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    rows = logits.reshape(-1, logits.shape[-1])
    probs = sample(rows, top_k=0 if top_k is None else top_k, top_p=0.0 if top_p is None else top_p,
                   temperature=temperature)
    return probs.reshape(logits.shape)
