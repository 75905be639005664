# lesson: 09_generating_text
# expect: wrong next_token_probs temperature-after-softmax
# expect: full generate
# The contract's generate beside a next_token_probs with temperature-after-softmax (from wrong_09_probs_temperature_after_softmax.py): generate is graded
# with the reference next_token_probs in place of the wrong one and keeps its points.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature <= 0:
        raise ValueError("temperature must be positive")
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1) / temperature
    if top_p is not None:
        p_sorted, idx = torch.sort(probs / probs.sum(-1, keepdim=True), dim=-1, descending=True, stable=True)
        keep_sorted = torch.cumsum(p_sorted, dim=-1) - p_sorted < top_p
        probs = probs * torch.zeros_like(keep_sorted).scatter(-1, idx, keep_sorted)
    return probs / probs.sum(dim=-1, keepdim=True)
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
