# lesson: 09_generating_text
# source: facebookresearch/xformers examples/fastgen/sample_utils.py 3289e1be72106a2f3eb08d1977ac65a17e189b75  (https://github.com/facebookresearch/xformers/blob/3289e1be72106a2f3eb08d1977ac65a17e189b75/examples/fastgen/sample_utils.py)
# source: karpathy/nanoGPT model.py 04a1d697ddc57aadb2edbe95816bf86c6b8918b0  (https://github.com/karpathy/nanoGPT/blob/04a1d697ddc57aadb2edbe95816bf86c6b8918b0/model.py)
# bug report: none (torch.multinomial accepts unnormalised weights, so the draws are right; the function's
#   probabilities, which the contract returns, do not sum to 1)
# adapted: top_p(probs, p) returns the masked probs_sort scattered back to token order instead of drawing from
#   them; temperature and softmax before it, and nanoGPT GPT.generate's top-k lines; added: the contract's
#   ValueError for temperature <= 0.
# expect: wrong next_token_probs not-renormalised
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    logits = logits / temperature
    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        logits = logits.clone()
        logits[logits < v[..., [-1]]] = -float('Inf')
    probs = torch.softmax(logits, dim=-1)
    if top_p is None:
        return probs
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > top_p
    probs_sort[mask] = 0.0
    return probs_sort.scatter(-1, probs_idx, probs_sort)
