# lesson: 09_generating_text
# expect: wrong next_token_probs top-p-drops-threshold-token
# Keeps a token while the running total including it is below top_p.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p is not None:
        p_sorted, idx = torch.sort(probs, dim=-1, descending=True, stable=True)
        keep_sorted = torch.cumsum(p_sorted, dim=-1) < top_p
        probs = probs * torch.zeros_like(keep_sorted).scatter(-1, idx, keep_sorted)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
