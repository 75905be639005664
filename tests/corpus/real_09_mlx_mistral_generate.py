# lesson: 09_generating_text
# source: ml-explore/mlx-examples llms/mistral/mistral.py 7ddca42f4dc83ea70f4c53d1b6a917d335ab435d  (https://github.com/ml-explore/mlx-examples/blob/7ddca42f4dc83ea70f4c53d1b6a917d335ab435d/llms/mistral/mistral.py)
# licence: MIT
# bug report: none (MLX has no training mode and no autograd tape to switch off; the course's model does)
# adapted: the generator generate(prompt, model, temp) as the contract's generate: mx.argmax -> argmax,
#   mx.random.categorical(logits * (1 / temp)) -> torch.multinomial(softmax(logits * (1 / temp)), 1,
#   generator=generator), the yielded tokens collected into (B, T0 + max_new_tokens), prompt[None] -> prompt (a
#   batch already). Real behaviour kept: the prompt once, then one token with the cache (right); no model.eval()
#   and no torch.no_grad() (MLX needs neither); top_k and top_p accepted and ignored (no catalogue id for that).
# expect: wrong generate generate-train-mode generate-grad-enabled
# %% generate
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    temp = temperature

    def sample(logits):
        if temp == 0:
            return torch.argmax(logits, dim=-1)
        else:
            return torch.multinomial(torch.softmax(logits * (1 / temp), dim=-1), 1, generator=generator)[:, 0]

    tokens = [prompt]
    logits, cache = model(prompt)
    y = sample(logits[:, -1, :])
    tokens.append(y[:, None])

    while len(tokens) - 1 < max_new_tokens:
        logits, cache = model(y[:, None], cache)
        y = sample(logits.squeeze(1))
        tokens.append(y[:, None])
    return torch.cat(tokens, dim=1)
