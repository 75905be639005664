# lesson: 09_generating_text
# source: meta-llama/llama llama/generation.py c769dfd53ddd509159216a5423204653850f79f4  (https://github.com/meta-llama/llama/blob/c769dfd53ddd509159216a5423204653850f79f4/llama/generation.py)
# source: karpathy/nanoGPT model.py 04a1d697ddc57aadb2edbe95816bf86c6b8918b0  (https://github.com/karpathy/nanoGPT/blob/04a1d697ddc57aadb2edbe95816bf86c6b8918b0/model.py)
# bug report: none
# adapted: Llama.generate's `torch.softmax(logits[:, -1] / temperature, dim=-1)` and sample_top_p(probs, p), whose
#   renormalised probs_sort are scattered back to token order (`probs_sort.scatter(-1, probs_idx, probs_sort)`)
#   instead of being drawn from; Llama has no top-k, so nanoGPT GPT.generate's top-k lines come first; added: the
#   contract's ValueError for temperature <= 0.
# expect: correct
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
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    return probs_sort.scatter(-1, probs_idx, probs_sort)
