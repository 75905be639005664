# lesson: 09_generating_text
# source: karpathy/nanoGPT model.py 04a1d697ddc57aadb2edbe95816bf86c6b8918b0  (https://github.com/karpathy/nanoGPT/blob/04a1d697ddc57aadb2edbe95816bf86c6b8918b0/model.py)
# bug report: none upstream (nanoGPT has no KV cache, and its docstring asks the caller for model.eval())
# adapted: GPT.generate(self, idx, max_new_tokens, temperature=1.0, top_k=None) -> generate(model, prompt,
#   max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None) (top_p and generator accepted, unused;
#   temperature 0 is not special-cased upstream); self(idx_cond) -> model(idx_cond); the block_size crop removed
#   (the course's models have no context limit); the next_token_probs cell is the course's reference-style one.
# expect: wrong generate cache-not-used generate-train-mode
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
        keep = (torch.cumsum(p_sorted, dim=-1) - p_sorted < top_p)
        keep[..., 0] = True
        probs = probs * torch.zeros_like(keep).scatter(-1, idx, keep)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs
# %% generate
@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    """
    Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
    the sequence max_new_tokens times, feeding the predictions back into the model each time.
    Most likely you'll want to make sure to be in model.eval() mode of operation for this.
    """
    for _ in range(max_new_tokens):
        # if the sequence context is growing too long we must crop it at block_size
        idx_cond = idx
        # forward the model to get the logits for the index in the sequence
        logits, _ = model(idx_cond)
        # pluck the logits at the final step and scale by desired temperature
        logits = logits[:, -1, :] / temperature
        # optionally crop the logits to only the top k options
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        # apply softmax to convert logits to (normalized) probabilities
        probs = F.softmax(logits, dim=-1)
        # sample from the distribution
        idx_next = torch.multinomial(probs, num_samples=1)
        # append sampled index to the running sequence and continue
        idx = torch.cat((idx, idx_next), dim=1)

    return idx
