# lesson: 09_generating_text
# source: huggingface/transformers src/transformers/generation/logits_process.py aa5108b449965084a90a4c8ce130a156aebf28f1  (https://github.com/huggingface/transformers/blob/aa5108b449965084a90a4c8ce130a156aebf28f1/src/transformers/generation/logits_process.py)
# bug report: none (the order of equal probabilities is not specified upstream; the course's contract fixes it)
# adapted: TemperatureLogitsWarper, TopKLogitsWarper and TopPLogitsWarper __call__(input_ids, scores) applied in
#   that order to `logits` (min_tokens_to_keep = 1, filter_value -inf), then a softmax; scatter(1, ...) ->
#   scatter(-1, ...) (logits with any number of leading axes); added: the contract's ValueError for temperature <= 0.
# expect: wrong next_token_probs top-p-tie-order
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    scores = logits / temperature
    if top_k is not None:
        top_k = min(top_k, scores.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        scores = scores.masked_fill(indices_to_remove, -float("Inf"))
    if top_p is not None:
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

        # Remove tokens with cumulative top_p above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
        # Keep at least min_tokens_to_keep
        sorted_indices_to_remove[..., -1:] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(-1, sorted_indices, sorted_indices_to_remove)
        scores = scores.masked_fill(indices_to_remove, -float("Inf"))
    return torch.softmax(scores, dim=-1)
