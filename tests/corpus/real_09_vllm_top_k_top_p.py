# lesson: 09_generating_text
# source: vllm-project/vllm vllm/model_executor/layers/sampler.py 467f7b5ee6e9f296caaabef9b13f044bfd1244b9  (https://github.com/vllm-project/vllm/blob/467f7b5ee6e9f296caaabef9b13f044bfd1244b9/vllm/model_executor/layers/sampler.py)
# licence: Apache-2.0
# bug report: none (inside vLLM the logits are its own scratch tensor; the contract's caller keeps them)
# adapted: Sampler.forward's temperature step and _apply_top_k_top_p(logits, p, k) as the contract's
#   next_token_probs: per-row tensors p and k -> the floats top_p and top_k (1.0 and V when not given, as
#   vLLM's defaults), dim 1 -> dim -1 and size(1) -> size(-1) (logits with any leading axes), the softmax
#   returned instead of sampled from; added: the contract's ValueError for temperature <= 0. Real behaviour kept:
#   `logits.to(torch.float)` is the caller's float32 tensor itself, so `div_` divides it in place; top-p sorts
#   ascending and keeps the end of the order, so equal probabilities are taken higher index first.
# expect: wrong next_token_probs input-modified top-p-tie-order
# %% next_token_probs
def _apply_top_k_top_p(logits, p, k):
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)

    # Apply top-k.
    top_k_mask = logits_sort.size(-1) - torch.full(logits.shape[:-1], k, dtype=torch.long)
    # Get all the top_k values.
    top_k_mask = logits_sort.gather(-1, top_k_mask.unsqueeze(dim=-1))
    top_k_mask = logits_sort < top_k_mask
    logits_sort.masked_fill_(top_k_mask, -float("inf"))

    # Apply top-p.
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = probs_sort.cumsum(dim=-1)
    top_p_mask = probs_sum <= 1 - p
    # at least one
    top_p_mask[..., -1] = False
    logits_sort.masked_fill_(top_p_mask, -float("inf"))

    # Re-sort the probabilities.
    logits = torch.empty_like(logits_sort).scatter_(dim=-1, index=logits_idx, src=logits_sort)
    return logits


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    # Use float32 to apply temperature scaling.
    # Use in-place division to avoid creating a new tensor.
    logits = logits.to(torch.float)
    logits.div_(temperature)
    if top_k is not None or top_p is not None:
        k = logits.shape[-1] if top_k is None else min(top_k, logits.shape[-1])
        logits = _apply_top_k_top_p(logits, 1.0 if top_p is None else top_p, k)
    return torch.softmax(logits, dim=-1, dtype=torch.float)
