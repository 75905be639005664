# lesson: 09_generating_text
# expect: wrong next_token_probs top-k-ties-dropped
# Keeps exactly the k indices torch.topk returns.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    logits = logits / temperature
    if top_k is not None:
        idx = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).indices
        keep = torch.zeros_like(logits, dtype=torch.bool).scatter(-1, idx, True)
        logits = logits.masked_fill(~keep, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    if top_p is not None:
        p_sorted, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        keep_sorted = torch.cumsum(p_sorted, dim=-1) - p_sorted < top_p
        probs = probs * torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
