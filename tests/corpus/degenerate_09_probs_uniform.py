# lesson: 09_generating_text
# expect: wrong next_token_probs -
# degenerate: a uniform distribution whatever the logits.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be positive")
    return torch.full_like(logits, 1.0 / logits.shape[-1])
