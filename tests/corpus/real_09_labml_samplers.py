# lesson: 09_generating_text
# source: labmlai/annotated_deep_learning_paper_implementations labml_nn/sampling/nucleus.py 318bd1780323d020d2695ebba477892e598a4ed2  (https://github.com/labmlai/annotated_deep_learning_paper_implementations/blob/318bd1780323d020d2695ebba477892e598a4ed2/labml_nn/sampling/nucleus.py)
# source: labmlai/annotated_deep_learning_paper_implementations labml_nn/sampling/top_k.py 318bd1780323d020d2695ebba477892e598a4ed2  (https://github.com/labmlai/annotated_deep_learning_paper_implementations/blob/318bd1780323d020d2695ebba477892e598a4ed2/labml_nn/sampling/top_k.py)
# source: labmlai/annotated_deep_learning_paper_implementations labml_nn/sampling/temperature.py 318bd1780323d020d2695ebba477892e598a4ed2  (https://github.com/labmlai/annotated_deep_learning_paper_implementations/blob/318bd1780323d020d2695ebba477892e598a4ed2/labml_nn/sampling/temperature.py)
# licence: MIT
# bug report: none
# adapted: TopKSampler(k, NucleusSampler(p, TemperatureSampler(T))), labml's way of composing its samplers, as the
#   contract's next_token_probs: each sampler returns the distribution its inner sampler would draw from (the
#   innermost returns softmax(logits / T) instead of Categorical(logits=logits / T).sample(), the nucleus scatters
#   that distribution back to token order with its sort indices); a sampler left out when its knob is None; the
#   contract's ValueError for temperature <= 0 added. Real behaviour kept: top_k keeps torch.topk's k indices
#   (exactly k, ties dropped); the nucleus is chosen on the softmax of the logits before the temperature, which the
#   innermost sampler applies last; a token leaves the nucleus when the running total *including* it is above p
#   (the shift drops the first flag and prepends a zero: the same mask, the first token forced in), so the token
#   that crosses p is dropped.
# expect: wrong next_token_probs top-k-ties-dropped top-p-before-temperature top-p-drops-threshold-token
# %% next_token_probs
class TemperatureSampler:
    def __init__(self, temperature: float = 1.0):
        self.temperature = temperature

    def __call__(self, logits):
        return torch.softmax(logits / self.temperature, dim=-1)


class NucleusSampler:
    def __init__(self, p: float, sampler):
        self.p = p
        self.sampler = sampler
        self.softmax = nn.Softmax(dim=-1)

    def __call__(self, logits):
        probs = self.softmax(logits)
        sorted_probs, indices = torch.sort(probs, dim=-1, descending=True)
        non_nucleus = (torch.cumsum(sorted_probs, dim=-1) > self.p)[..., 1:]
        non_nucleus = torch.cat([non_nucleus.new_zeros(non_nucleus.shape[:-1] + (1,)), non_nucleus], dim=-1)
        sorted_log_probs = torch.log(sorted_probs)
        sorted_log_probs[non_nucleus] = float('-inf')
        sorted_dist = self.sampler(sorted_log_probs)
        return torch.zeros_like(sorted_dist).scatter(-1, indices, sorted_dist)


class TopKSampler:
    def __init__(self, k: int, sampler):
        self.k = k
        self.sampler = sampler

    def __call__(self, logits):
        zeros = logits.new_ones(logits.shape) * float('-inf')
        values, indices = torch.topk(logits, self.k, dim=-1)
        zeros.scatter_(-1, indices, values)
        return self.sampler(zeros)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    sampler = TemperatureSampler(temperature)
    if top_p is not None:
        sampler = NucleusSampler(top_p, sampler)
    if top_k is not None:
        sampler = TopKSampler(top_k, sampler)
    return sampler(logits)
