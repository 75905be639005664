# lesson: 09_generating_text
# source: karpathy/nanochat nanochat/engine.py 400f4449db06b37acf5f7b5d312c4f930a43a2ac  (https://github.com/karpathy/nanochat/blob/400f4449db06b37acf5f7b5d312c4f930a43a2ac/nanochat/engine.py)
# licence: MIT
# bug report: none
# adapted: sample_next_token(logits, rng, temperature, top_k) as the contract's next_token_probs: the
#   distribution torch.multinomial draws from returned (scattered back to token order where nanochat samples among
#   torch.topk's indices) instead of the token; rng dropped; logits with leading axes flattened to (B, vocab) and
#   reshaped back. Real behaviour kept: exactly top_k tokens kept (torch.topk's k indices: tokens tied with the
#   k-th dropped); no top-p (top_p is accepted and unused); temperature 0 is the argmax (one-hot here) and only a
#   negative temperature is refused (AssertionError, not ValueError).
# expect: wrong next_token_probs top-k-ties-dropped
# %% next_token_probs
@torch.inference_mode()
def sample_next_token(logits, temperature=1.0, top_k=None):
    """Sample a single next token from given logits of shape (B, vocab_size). Returns (B, 1)."""
    assert temperature >= 0.0, "temperature must be non-negative"
    if temperature == 0.0:
        return F.one_hot(torch.argmax(logits, dim=-1), logits.shape[-1]).to(logits.dtype)
    if top_k is not None and top_k > 0:
        k = min(top_k, logits.size(-1))
        vals, idx = torch.topk(logits, k, dim=-1)
        vals = vals / temperature
        probs = F.softmax(vals, dim=-1)
        return torch.zeros_like(logits).scatter(1, idx, probs)
    else:
        logits = logits / temperature
        probs = F.softmax(logits, dim=-1)
        return probs


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    rows = logits.reshape(-1, logits.shape[-1])
    return sample_next_token(rows, temperature, top_k).reshape(logits.shape)
