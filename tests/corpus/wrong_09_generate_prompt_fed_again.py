# lesson: 09_generating_text
# expect: wrong generate prompt-fed-again
# Feeds the whole sequence so far together with the cache at every step.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
        logits = torch.where(logits < kth, torch.full_like(logits, float("-inf")), logits)
    probs = torch.softmax(logits, dim=-1)
    if top_p is not None:
        p_sorted, idx = torch.sort(probs, dim=-1, descending=True, stable=True)
        before = torch.cumsum(p_sorted, dim=-1) - p_sorted
        drop_sorted = before >= top_p
        drop_sorted[..., 0] = False
        drop = drop_sorted.scatter(-1, idx, drop_sorted)
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
# %% generate
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    was_training = model.training
    model.eval()
    out = prompt
    with torch.no_grad():
        logits, cache = model(prompt, cache=None)
        for i in range(max_new_tokens):
            last = logits[:, -1]
            if temperature == 0:
                nxt = torch.argmax(last, dim=-1, keepdim=True)
            else:
                nxt = torch.multinomial(next_token_probs(last, temperature, top_k, top_p), 1, generator=generator)
            out = torch.cat([out, nxt], dim=1)
            if i < max_new_tokens - 1:
                logits, cache = model(out, cache=cache)
    model.train(was_training)
    return out
