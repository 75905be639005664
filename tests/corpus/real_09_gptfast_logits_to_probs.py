# lesson: 09_generating_text
# source: pytorch-labs/gpt-fast generate.py 32971d3129541c5bfb4f715abc33d1c5f408d204  (https://github.com/pytorch-labs/gpt-fast/blob/32971d3129541c5bfb4f715abc33d1c5f408d204/generate.py)
# licence: BSD-3-Clause (Copyright 2023 Meta)
# bug report: none (gpt-fast samples with temperature and top-k only)
# adapted: logits_to_probs(logits, temperature, top_k) renamed next_token_probs with the contract's signature;
#   real behaviour kept: top_p is accepted and ignored (gpt-fast has none), and a temperature <= 0 is clamped to
#   1e-5 (`max(temperature, 1e-5)`) instead of raising ValueError. Neither has a catalogue id.
# expect: wrong next_token_probs -
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    logits = logits / max(temperature, 1e-5)

    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return probs
