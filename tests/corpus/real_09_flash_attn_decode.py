# lesson: 09_generating_text
# source: Dao-AILab/flash-attention flash_attn/utils/generation.py 8a326bbc9e4f6eb7deca5737693b84c7c570569c  (https://github.com/Dao-AILab/flash-attention/blob/8a326bbc9e4f6eb7deca5737693b84c7c570569c/flash_attn/utils/generation.py)
# licence: BSD-3-Clause
# bug report: none (its callers put the model in eval mode)
# adapted: decode(input_ids, model, max_length, top_k, top_p, temperature, ...) with sample() as the contract's
#   generate: max_length = T0 + max_new_tokens; model(input_ids, inference_params=..., num_last_tokens=1).logits
#   -> model(ids, cache=...) returning (logits, cache), its last position taken; InferenceParams replaced by the
#   cache the model returns; the CUDA-graph, teacher-forcing, vocab_size, eos and timing paths dropped; None for
#   top_k/top_p mapped to 0 and 0.0; temperature 0 mapped to flash-attn's greedy top_k=1; the generator given to
#   torch.multinomial; the output dataclass -> the sequences tensor; the next_token_probs cell is the course's
#   reference-style one (flash-attn samples with its own sample()). Real behaviour kept: the prompt once, then
#   each new token alone with the cache, under torch.inference_mode(); the draw among torch.topk's k logits;
#   model.eval() never called.
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
def modify_logits_for_top_p_filtering(logits, top_p):
    """Set the logits for none top-p values to -inf. Done in-place."""
    if top_p <= 0.0 or top_p >= 1.0:
        return
    # First sort and calculate cumulative sum of probabilities.
    sorted_logits, sorted_indices = torch.sort(logits, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    # scatter sorted tensors to original indexing
    indices_to_remove = sorted_indices_to_remove.scatter(
        1, sorted_indices, sorted_indices_to_remove
    )
    logits.masked_fill_(indices_to_remove, float("-inf"))


def sample(logits, top_k=1, top_p=0.0, temperature=1.0, generator=None):
    if top_k == 1:  # Short-circuit for greedy decoding
        return logits.argmax(dim=-1)
    else:
        if top_p > 0.0:
            assert top_p <= 1.0, "top-p should be in (0, 1]."
        if top_k > 0:
            top_k = min(top_k, logits.size(-1))  # Safety check
            logits_top, indices = torch.topk(logits, top_k, dim=-1)
            if temperature != 1.0:
                logits_top /= temperature
            modify_logits_for_top_p_filtering(logits_top, top_p)
            return indices[
                torch.arange(indices.shape[0], device=indices.device),
                torch.multinomial(torch.softmax(logits_top, dim=-1), num_samples=1,
                                  generator=generator).squeeze(dim=-1),
            ]
        else:
            # Clone so that when we modify for top_p we don't change the original logits
            logits_top = logits / temperature if temperature != 1.0 else logits.clone()
            modify_logits_for_top_p_filtering(logits_top, top_p)
            return torch.multinomial(torch.softmax(logits_top, dim=-1), num_samples=1,
                                     generator=generator).squeeze(dim=-1)


def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    input_ids, max_length = prompt, prompt.shape[1] + max_new_tokens
    top_k = 1 if temperature == 0 else (0 if top_k is None else top_k)
    top_p = 0.0 if top_p is None else top_p
    batch_size, seqlen_og = input_ids.shape
    with torch.inference_mode():
        logits, cache = model(input_ids, cache=None)
        logits = logits[:, -1]
        next_token = sample(logits, top_k=top_k, top_p=top_p, temperature=temperature, generator=generator)
        sequences = [next_token]
        sequence_len_offset = seqlen_og
        while True:
            logits, cache = model(next_token[:, None], cache=cache)
            logits = logits[:, -1]
            next_token = sample(logits, top_k=top_k, top_p=top_p, temperature=temperature, generator=generator)
            sequences.append(next_token)
            sequence_len_offset += 1
            if sequence_len_offset >= max_length - 1:
                break
    return torch.cat([input_ids, torch.stack(sequences, dim=1)], dim=1)
