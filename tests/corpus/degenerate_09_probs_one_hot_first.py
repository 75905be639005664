# lesson: 09_generating_text
# expect: wrong next_token_probs -
# degenerate: all the probability on token 0.
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be positive")
    out = torch.zeros_like(logits)
    out[..., 0] = 1.0
    return out
