# lesson: 09_generating_text
# source: open-mmlab/Amphion utils/topk_sampling.py 6a1ca613b143e070d11c34b9ea68328171efc0e7  (https://github.com/open-mmlab/Amphion/blob/6a1ca613b143e070d11c34b9ea68328171efc0e7/utils/topk_sampling.py)
# licence: MIT
# bug report: none
# adapted: topk_sampling(logits, top_k, top_p, temperature) as the contract's next_token_probs: the softmax it
#   samples from is returned; None for top_k/top_p mapped to Amphion's 0 and 1.0; scatter(1, ...) ->
#   scatter(-1, ...) (logits with any number of leading axes); added: the contract's ValueError for temperature
#   <= 0. Real behaviour kept: at temperature 1 the logits are not copied, so top_k_top_p_filtering writes
#   -inf into the caller's logits (`logits[indices_to_remove] = filter_value`); and top-p scatters the boolean
#   mask into the integer tensor sorted_indices, which this PyTorch refuses (RuntimeError: scatter(): Expected
#   self.dtype to be equal to src.dtype), so every top_p call raises (no catalogue id).
# expect: wrong next_token_probs input-modified
# %% next_token_probs
import torch.nn.functional as F


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf"), min_tokens_to_keep=1):
    if top_k > 0:
        # Apply top-k filtering
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))
        indices_to_remove = logits < torch.topk(logits, top_k).values[..., -1, None]
        logits[indices_to_remove] = filter_value

    if top_p < 1.0:
        # Apply top-p filtering
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

        # Create a mask to remove tokens with cumulative probability above the top_p threshold
        sorted_indices_to_remove = cumulative_probs > top_p
        if min_tokens_to_keep > 1:
            sorted_indices_to_remove[..., :min_tokens_to_keep] = 0
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0

        # Scatter sorted tensors back to original indexing
        indices_to_remove = sorted_indices.scatter(-1, sorted_indices, sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value

    return logits


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    # Adjust logits using temperature
    if temperature != 1.0:
        logits = logits / temperature

    # Top-p/top-k filtering
    logits = top_k_top_p_filtering(logits, top_k=0 if top_k is None else top_k,
                                   top_p=1.0 if top_p is None else top_p)
    return F.softmax(logits, dim=-1)
