# lesson: 09_generating_text
# source: karpathy/nano-llama31 llama31.py 06461cada7744a7da86a408f094549800b6bee3f  (https://github.com/karpathy/nano-llama31/blob/06461cada7744a7da86a408f094549800b6bee3f/llama31.py)
# licence: none stated in the repository at that commit (adapted from Meta's Llama 3.1 code, Llama 3.1 Community License)
# bug report: none
# adapted: Llama.generate(prompt_tokens, sample_rng, max_gen_len, temperature, top_p) and sample_top_p as the
#   contract's generate: one (B, T0) prompt tensor (no padding, no EOS, echo=True, the prompt returned first);
#   the model's KV cache, kept inside nano-llama31's layers and addressed by prev_pos, passed as the contract's
#   `cache` (forward_inference(tokens[:, prev_pos:cur_pos], prev_pos) -> model(tokens[:, prev_pos:cur_pos], cache));
#   sample_rng -> the contract's generator; top_p None -> 1.0. Real behaviour kept: @torch.inference_mode(), the
#   prompt once then one token at a time, no model.eval() (its main() calls it before generating), top_k ignored
#   (there is none), and the draw made on the probabilities sorted in decreasing order (torch.multinomial on
#   probs_sort, then gather), which picks other tokens from the same seeded generator (no catalogue id).
# expect: wrong generate generate-train-mode
# %% generate
def sample_top_p(probs, p, generator):
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    next_token = torch.multinomial(probs_sort, num_samples=1, generator=generator)
    next_token = torch.gather(probs_idx, -1, next_token)
    return next_token


@torch.inference_mode()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    top_p = 1.0 if top_p is None else top_p
    bsz, min_prompt_len = prompt.shape
    total_len = min_prompt_len + max_new_tokens
    tokens = torch.zeros((bsz, total_len), dtype=torch.long)
    tokens[:, :min_prompt_len] = prompt

    prev_pos = 0
    cache = None
    for cur_pos in range(min_prompt_len, total_len):
        # get the logits for the next token in all the batch rows
        logits, cache = model(tokens[:, prev_pos:cur_pos], cache)
        # sample the next token
        if temperature > 0:
            probs = torch.softmax(logits[:, -1] / temperature, dim=-1)
            next_token = sample_top_p(probs, top_p, generator)
        else:
            next_token = torch.argmax(logits[:, -1], dim=-1)
        next_token = next_token.reshape(-1)
        tokens[:, cur_pos] = next_token
        prev_pos = cur_pos
    return tokens
