# lesson: 09_generating_text
# Written for the course in the style of fairseq's sequence_generator sampling (issue 32's hidden corpus): top-p
# when it is given, else top-k, never both (fairseq's `if sampling_topp > 0: ... elif sampling_topk > 0`).
# Where top_k and top_p are given together only top-p applies; no catalogued id fits, and the feedback may say
# only what the answer was seen to equal (never "top-k is applied to the probabilities after the softmax").
# expect: wrong next_token_probs -
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    lprobs = torch.log_softmax(logits / temperature, dim=-1)
    if top_p is not None:
        probs = lprobs.exp()
        sorted_probs, sorted_indices = probs.sort(descending=True, stable=True)
        cumsum_probs = sorted_probs.cumsum(dim=-1)
        mask = (cumsum_probs - sorted_probs) >= top_p        # tokens after the one that reaches top_p
        mask = mask.scatter(-1, sorted_indices, mask)
        lprobs = lprobs.masked_fill(mask, float("-inf"))
    elif top_k is not None:
        kth = torch.topk(lprobs, min(top_k, lprobs.shape[-1]), dim=-1).values[..., -1:]
        lprobs = lprobs.masked_fill(lprobs < kth, float("-inf"))
    return torch.softmax(lprobs, dim=-1)
