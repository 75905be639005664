# lesson: 09_generating_text
# expect: wrong next_token_probs top-p-before-temperature
# expect: full generate
# The contract's generate beside a next_token_probs with top-p-before-temperature (from wrong_09_probs_top_p_before_temperature.py): generate is graded
# with the reference next_token_probs in place of the wrong one and keeps its points.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        raw = torch.softmax(logits, dim=-1)
        p_sorted, idx = torch.sort(raw, dim=-1, descending=True, stable=True)
        drop_sorted = torch.cumsum(p_sorted, dim=-1) - p_sorted >= top_p
        drop = drop_sorted.scatter(-1, idx, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return torch.softmax(logits / temperature, dim=-1)
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
                logits, cache = model(nxt, cache=cache)
    model.train(was_training)
    return out
