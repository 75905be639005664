# lesson: 09_generating_text
# source: ml-explore/mlx-examples llms/llama/llama.py 7ddca42f4dc83ea70f4c53d1b6a917d335ab435d  (https://github.com/ml-explore/mlx-examples/blob/7ddca42f4dc83ea70f4c53d1b6a917d335ab435d/llms/llama/llama.py)
# licence: MIT
# bug report: none (MLX has no training mode and no autograd tape to switch off; the course's model does)
# adapted: Llama.generate(x, temp), a generator that runs its own layers with a per-layer cache, as the contract's
#   generate on a model: the prompt pass (embedding, layers with the causal mask, norm, output) -> model(prompt),
#   the per-token pass with the layers' caches -> model(y[:, None], cache); mx.argmax -> argmax,
#   mx.random.categorical(logits * (1 / temp)) -> torch.multinomial(softmax(logits * (1 / temp)), 1,
#   generator=generator); the yielded tokens collected after the prompt. Real behaviour kept: the logits of the
#   last position only, the prompt once and then one token with the cache; no model.eval() and no
#   torch.no_grad(); top_k and top_p accepted and ignored (no catalogue id).
# expect: wrong generate generate-train-mode generate-grad-enabled
# %% generate
def generate(model, x, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    temp = temperature

    def sample(logits):
        if temp == 0:
            return torch.argmax(logits, dim=-1)
        else:
            return torch.multinomial(torch.softmax(logits * (1 / temp), dim=-1), 1, generator=generator)[:, 0]

    out = [x]
    # First we process the prompt x the same was as in __call__ but
    # save the caches in cache
    logits, cache = model(x)
    # We only care about the last logits that generate the next token
    y = sample(logits[:, -1])
    out.append(y[:, None])

    # Now we parsed the prompt and generated the first token we
    # need to feed it back into the model and loop to generate the
    # rest.
    while len(out) - 1 < max_new_tokens:
        # Unsqueezing the last dimension to add a sequence length
        # dimension of 1
        logits, cache = model(y[:, None], cache)
        y = sample(logits[:, -1])
        out.append(y[:, None])
    return torch.cat(out, dim=1)
