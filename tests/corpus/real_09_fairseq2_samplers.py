# lesson: 09_generating_text
# source: facebookresearch/fairseq2 src/fairseq2/generation/sampling/sampler.py 5662cbf33bc465369b477f4ccb99d878d6175137  (https://github.com/facebookresearch/fairseq2/blob/5662cbf33bc465369b477f4ccb99d878d6175137/src/fairseq2/generation/sampling/sampler.py)
# licence: BSD-3-Clause
# bug report: none
# adapted: TopPSampler.sample(probs) and TopKSampler.sample(probs) as the contract's next_token_probs: each returns
#   the distribution torch.multinomial draws from (scattered back to token order) instead of the token; the
#   probabilities they are given are the softmax of logits / temperature, as fairseq2's sampling generator makes
#   them; one sampler per generator, as fairseq2 configures it: the top-k one when top_k is given, else the top-p
#   one (none without either); logits with leading axes flattened to (N, V) and reshaped back; the contract's
#   ValueError for temperature <= 0 added. Real behaviour kept: top-k keeps torch.topk's k indices (exactly k,
#   ties dropped; k == 1 is the argmax), top-p keeps a token while the total before it is not above p, and top_p
#   is ignored when top_k is given.
# expect: wrong next_token_probs top-k-ties-dropped
# %% next_token_probs
class TopPSampler:
    def __init__(self, p: float = 0.9) -> None:
        self._p = p

    def sample(self, probs):
        probs = probs / probs.sum(dim=-1, keepdim=True)
        sorted_probs, sorted_indices = torch.sort(probs, dim=-1, descending=True)
        cumsum_probs = torch.cumsum(sorted_probs, dim=-1)
        mask = (cumsum_probs - sorted_probs) > self._p
        sorted_probs[mask] = 0.0
        sorted_probs /= sorted_probs.sum(dim=-1, keepdim=True)
        return torch.zeros_like(probs).scatter(-1, sorted_indices, sorted_probs)


class TopKSampler:
    def __init__(self, k: int) -> None:
        self._k = k

    def sample(self, probs):
        k = min(self._k, probs.size(1))
        if k == 1:
            return F.one_hot(torch.argmax(probs, dim=-1), probs.shape[-1]).to(probs.dtype)
        topk_probs, topk_indices = torch.topk(probs, k=k, dim=-1, sorted=False)
        topk_probs /= topk_probs.sum(dim=-1, keepdim=True)
        return torch.zeros_like(probs).scatter(-1, topk_indices, topk_probs)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    probs = torch.softmax(logits.reshape(-1, logits.shape[-1]) / temperature, dim=-1)
    if top_k is not None:
        probs = TopKSampler(top_k).sample(probs)
    elif top_p is not None:
        probs = TopPSampler(top_p).sample(probs)
    return probs.reshape(logits.shape)
