# lesson: 09_generating_text
# source: mistralai/mistral-inference src/mistral_inference/generate.py 2557e12d0e1878a1562ece30434820f80aa3e12a  (https://github.com/mistralai/mistral-inference/blob/2557e12d0e1878a1562ece30434820f80aa3e12a/src/mistral_inference/generate.py)
# licence: Apache-2.0
# bug report: none
# adapted: sample(logits, temperature, top_p) and sample_top_p(probs, p) as the contract's next_token_probs: the
#   distribution torch.multinomial draws from (probs_sort) scattered back to token order and returned; top_p
#   None -> 1.0; added: the contract's ValueError for temperature <= 0 (mistral-inference's temperature 0 is
#   greedy). Real behaviour kept: top_k accepted and ignored (there is none); top-p from an unstable descending
#   torch.sort, a token kept when the total before it is not above top_p.
# expect: wrong next_token_probs -
# %% next_token_probs
def sample_top_p(probs, p):
    assert 0 <= p <= 1

    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    return torch.zeros_like(probs_sort).scatter(-1, probs_idx, probs_sort)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    probs = torch.softmax(logits / temperature, dim=-1)
    return sample_top_p(probs, 1.0 if top_p is None else top_p)
