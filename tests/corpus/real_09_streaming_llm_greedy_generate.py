# lesson: 09_generating_text
# source: mit-han-lab/streaming-llm examples/run_streaming_llama.py b67bb6dda3cf621d959fead607a080f1734900e6  (https://github.com/mit-han-lab/streaming-llm/blob/b67bb6dda3cf621d959fead607a080f1734900e6/examples/run_streaming_llama.py)
# licence: MIT
# bug report: none (the model it drives is loaded by Hugging Face in eval mode; it only ever decodes greedily)
# adapted: greedy_generate(model, tokenizer, input_ids, past_key_values, max_gen_len) as the contract's generate:
#   model(input_ids=..., past_key_values=..., use_cache=True) -> model(ids, cache=...) returning (logits, cache);
#   the generated ids kept as (B, 1) tensors instead of .item() (batched prompts) and returned after the prompt;
#   the tokenizer's streaming print and the eos stop dropped; past_key_values starts as None; the temperature,
#   top_k, top_p and generator are accepted and unused; the next_token_probs cell is the course's reference-style
#   one. Real behaviour kept: the prompt once with the cache, then each new token alone with the cache it
#   returned, under torch.no_grad(); always the argmax; model.eval() never called.
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
@torch.no_grad()
def greedy_generate(model, input_ids, past_key_values, max_gen_len):
    outputs = model(
        input_ids,
        cache=past_key_values,
    )
    past_key_values = outputs[1]
    pred_token_idx = outputs[0][:, -1, :].argmax(dim=-1).unsqueeze(1)
    generated_ids = [pred_token_idx]
    for _ in range(max_gen_len - 1):
        outputs = model(
            pred_token_idx,
            cache=past_key_values,
        )
        past_key_values = outputs[1]
        pred_token_idx = outputs[0][:, -1, :].argmax(dim=-1).unsqueeze(1)
        generated_ids.append(pred_token_idx)
    return torch.cat([input_ids] + generated_ids, dim=1)


def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    return greedy_generate(model, prompt, None, max_new_tokens)
