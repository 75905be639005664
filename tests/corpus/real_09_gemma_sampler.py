# lesson: 09_generating_text
# source: google/gemma_pytorch gemma/model.py 014acb7ac4563a5f77c76d7ff98f31b568c16508  (https://github.com/google/gemma_pytorch/blob/014acb7ac4563a5f77c76d7ff98f31b568c16508/gemma/model.py)
# licence: Apache-2.0
# bug report: none found upstream; the issue-32 measurement named input-modified only
# adapted: Sampler.forward after the logits are computed, as the contract's next_token_probs: a float temperature
#   and top_p/top_k in place of the per-row tensors `temperatures`, `top_ps`, `top_ks`; top-p and top-k applied only
#   when given; the distribution returned instead of drawn from; added: the contract's ValueError for temperature
#   <= 0. Real behaviour kept: `logits.div_` divides the caller's logits in place; top-k keeps exactly k tokens of
#   the sorted probabilities (ties dropped); top-p is chosen on all the tokens before top-k.
# expect: wrong next_token_probs input-modified top-k-ties-dropped
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    # Apply temperature scaling.
    logits.div_(temperature)

    # Calculate probabilities with softmax.
    probs = torch.softmax(logits, dim=-1, dtype=torch.float)
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)

    # Apply top-p, top-k.
    if top_p is not None:
        probs_sum = torch.cumsum(probs_sort, dim=-1)
        top_ps_mask = (probs_sum - probs_sort) > top_p
        probs_sort = torch.where(top_ps_mask, 0, probs_sort)

    if top_k is not None:
        top_ks_mask = torch.arange(probs_idx.shape[-1], device=probs_idx.device)
        top_ks_mask = top_ks_mask.expand(probs_idx.shape)
        top_ks_mask = top_ks_mask >= top_k
        probs_sort = torch.where(top_ks_mask, 0, probs_sort)

    # Re-normalization.
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    probs = torch.gather(probs_sort, dim=-1, index=torch.argsort(probs_idx, dim=-1))
    return probs
