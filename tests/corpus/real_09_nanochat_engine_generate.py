# lesson: 09_generating_text
# source: karpathy/nanochat nanochat/engine.py 400f4449db06b37acf5f7b5d312c4f930a43a2ac  (https://github.com/karpathy/nanochat/blob/400f4449db06b37acf5f7b5d312c4f930a43a2ac/nanochat/engine.py)
# licence: MIT
# bug report: none (nanochat loads its model with phase="eval" before it builds an Engine)
# adapted: Engine.generate(tokens, num_samples, max_tokens, temperature, top_k, seed) and sample_next_token as the
#   contract's generate: the batched prompt prefilled at once (nanochat prefills one row and copies its KVCache to
#   num_samples rows), model.forward(ids, kv_cache=...) -> model(ids, cache=...) returning (logits, cache); the
#   tool-use state machine, the stop tokens and the generator of token columns dropped (the columns are
#   concatenated after the prompt); rng is the generator given; top_p accepted and unused; the next_token_probs
#   cell is the course's reference-style one (nanochat samples with its own sample_next_token). Real behaviour
#   kept: the prompt once, then each new token alone with the cache, under torch.inference_mode(); temperature 0
#   is the argmax; with top_k, the draw is among torch.topk's k logits; model.eval() never called.
# expect: wrong generate generate-train-mode
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
        sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs
        keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, before < top_p)
        probs = probs.masked_fill(~keep, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
# %% generate
@torch.inference_mode()
def sample_next_token(logits, rng, temperature=1.0, top_k=None):
    """Sample a single next token from given logits of shape (B, vocab_size). Returns (B, 1)."""
    assert temperature >= 0.0, "temperature must be non-negative"
    if temperature == 0.0:
        return torch.argmax(logits, dim=-1, keepdim=True)
    if top_k is not None and top_k > 0:
        k = min(top_k, logits.size(-1))
        vals, idx = torch.topk(logits, k, dim=-1)
        vals = vals / temperature
        probs = F.softmax(vals, dim=-1)
        choice = torch.multinomial(probs, num_samples=1, generator=rng)
        return idx.gather(1, choice)
    else:
        logits = logits / temperature
        probs = F.softmax(logits, dim=-1)
        return torch.multinomial(probs, num_samples=1, generator=rng)


@torch.inference_mode()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    rng = generator
    # 1) Run a prefill of the prompt tokens
    logits, kv_cache = model(prompt, cache=None)
    logits = logits[:, -1, :]
    # 4) Main generation loop
    num_generated = 0
    columns = [prompt]
    while True:
        # Stop condition: we've reached max tokens
        if max_new_tokens is not None and num_generated >= max_new_tokens:
            break
        next_ids = sample_next_token(logits, rng, temperature, top_k)  # (B, 1)
        columns.append(next_ids)
        num_generated += 1
        # Prepare logits for next iteration
        logits, kv_cache = model(next_ids, cache=kv_cache)
        logits = logits[:, -1, :]  # (B, vocab_size)
    return torch.cat(columns, dim=1)
