# lesson: 09_generating_text
# source: evolutionaryscale/esm esm/utils/sampling.py 6e89bf7d127b06e95d8243c020936cd67d862229  (https://github.com/evolutionaryscale/esm/blob/6e89bf7d127b06e95d8243c020936cd67d862229/esm/utils/sampling.py)
# licence: Cambrian Open License Agreement (the code on GitHub; see the repository's LICENSE.md)
# bug report: none found upstream; the issue-32 measurement named only input-modified here
# adapted: sample_logits(logits, temperature, valid_ids, top_p) and top_p_logits(logits, top_p) as the contract's
#   next_token_probs: the softmax it samples from is returned instead of drawn from; valid_ids dropped (every id
#   is valid); `top_p < 1.0` guarded by `top_p is not None`; _tensorize_like(top_p) replaced by the float; added:
#   the contract's ValueError for temperature <= 0 and its top_k (ESM has none). Real bugs kept: top_p_logits
#   writes into the caller's logits (a reshape is a view), keeps a token only while the total including it is
#   <= top_p, and runs on the logits before they are divided by the temperature.
# expect: wrong next_token_probs input-modified top-p-drops-threshold-token top-p-before-temperature
# %% next_token_probs
import torch.nn.functional as F


def top_p_logits(logits, top_p):
    batch_dims = logits.size()[:-1]
    logits = logits.reshape(-1, logits.shape[-1])

    # Sort logits in descending order and extract the mask for the top_p
    sorted_logits, sorted_indices = torch.sort(logits, dim=-1, descending=True)
    cumsum_logits = sorted_logits.softmax(-1).cumsum(-1)
    top_p_mask = cumsum_logits <= top_p

    # Make sure at least one token is sampled
    top_p_mask[:, 0] = True

    # Mask out the logits that are not in the top_p
    batch_indices_to_mask, _ = torch.where(~top_p_mask)
    vocab_indices_to_mask = sorted_indices[~top_p_mask]
    logits[batch_indices_to_mask, vocab_indices_to_mask] = torch.finfo(logits.dtype).min

    return logits.reshape(*batch_dims, -1)


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        logits = top_p_logits(logits, top_p=top_p)
    return F.softmax(logits / temperature, dim=-1)
