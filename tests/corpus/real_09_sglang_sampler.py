# lesson: 09_generating_text
# source: sgl-project/sglang python/sglang/srt/layers/sampler.py 584f55d1ce76e57478ef233d04f6afbfd585960f  (https://github.com/sgl-project/sglang/blob/584f55d1ce76e57478ef233d04f6afbfd585960f/python/sglang/srt/layers/sampler.py)
# licence: Apache-2.0
# bug report: none (inside SGLang the logits are its own scratch tensor, and torch.multinomial normalises)
# adapted: Sampler.forward's non-greedy path with the "pytorch" backend, top_k_top_p_min_p_sampling_from_probs_torch
#   without min-p, as the contract's next_token_probs: the weights handed to torch.multinomial scattered back
#   to token order and returned; per-row tensors top_ks/top_ps -> the ints/floats top_k/top_p (V and 1.0 when
#   not given); logits with leading axes flattened to rows and reshaped back; added: the contract's ValueError
#   for temperature <= 0. Real behaviour kept: the caller's logits are divided and overwritten with the softmax
#   in place; exactly k tokens kept from the sorted probabilities; the top-p totals taken before top-k zeroes
#   the rest; the kept weights are not renormalised (multinomial does not need it).
# Named since issue 32's third round: exactly k kept (top-k-ties-dropped), of the softmax over all tokens and
#   not renormalised, is three fingerprints at once (probs_mutants combines three when top_k is given).
# expect: wrong next_token_probs input-modified not-renormalised top-k-ties-dropped
# %% next_token_probs
def top_k_top_p_min_p_sampling_from_probs_torch(probs, top_ks, top_ps):
    probs_sort, probs_idx = probs.sort(dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    probs_sort[
        torch.arange(0, probs.shape[-1], device=probs.device).view(1, -1)
        >= top_ks.view(-1, 1)
    ] = 0.0
    probs_sort[(probs_sum - probs_sort) > top_ps.view(-1, 1)] = 0.0
    return torch.zeros_like(probs_sort).scatter_(-1, probs_idx, probs_sort)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    rows = logits.view(-1, logits.shape[-1])
    # Post process logits
    rows.div_(temperature)
    rows[:] = torch.softmax(rows, dim=-1)
    probs = rows
    top_ks = torch.full((rows.shape[0],), rows.shape[-1] if top_k is None else top_k)
    top_ps = torch.full((rows.shape[0],), 1.0 if top_p is None else top_p)
    return top_k_top_p_min_p_sampling_from_probs_torch(probs, top_ks, top_ps).view(logits.shape)
