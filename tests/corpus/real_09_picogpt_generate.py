# lesson: 09_generating_text
# source: jaymody/picoGPT gpt2.py 817292baea75f194fb0bb8ba2aa5f947af4e45ee  (https://github.com/jaymody/picoGPT/blob/817292baea75f194fb0bb8ba2aa5f947af4e45ee/gpt2.py)
# licence: MIT
# bug report: none (picoGPT is greedy by design and has no KV cache)
# adapted: generate(inputs, params, n_head, n_tokens_to_generate) as the contract's generate: the model call
#   gpt2(inputs, **params, n_head=n_head) -> model(inputs)[0] on a (B, T) tensor, np.argmax(logits[-1]) ->
#   argmax over the last position of each row, inputs.append -> torch.cat; tqdm dropped. Real behaviour kept:
#   greedy whatever the temperature, the whole sequence fed at every step without a cache, no eval() or
#   no_grad(), and only the generated ids returned (the prompt left out).
# Named since issue 32's third round: the whole sequence fed at every step (cache-not-used), by the cache check's
#   greedy run, now judged even when its sampled run fails first (greedy whatever the temperature).
# expect: wrong generate wrong-shape generate-train-mode generate-grad-enabled cache-not-used
# %% generate
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    inputs = prompt
    n_tokens_to_generate = max_new_tokens
    for _ in range(n_tokens_to_generate):  # auto-regressive decode loop
        logits = model(inputs)[0]  # model forward pass
        next_id = torch.argmax(logits[:, -1], dim=-1, keepdim=True)  # greedy sampling
        inputs = torch.cat([inputs, next_id], dim=1)  # append prediction to input

    return inputs[:, inputs.shape[1] - n_tokens_to_generate:]  # only return generated ids
