# lesson: 09_generating_text
# source: BlinkDL/ChatRWKV rwkv_pip_package/src/rwkv/utils.py db57d70bd151fbbd3fd1fb7e67e18a052cfaab6e  (https://github.com/BlinkDL/ChatRWKV/blob/db57d70bd151fbbd3fd1fb7e67e18a052cfaab6e/rwkv_pip_package/src/rwkv/utils.py)
# licence: Apache-2.0
# bug report: none
# adapted: PIPELINE.sample_logits(logits, temperature, top_p, top_k), its CPU branch (which normalises) in torch:
#   the distribution returned instead of drawn from, each row of logits with leading axes handled as the one row
#   RWKV samples; top-p and top-k applied only when given (RWKV's defaults are 0.85 and 0). Real behaviour
#   kept: top-p is chosen on the softmax of the raw logits and the temperature applied after it, as
#   probs ** (1 / temperature); top-k zeroes all but the last k of an argsort (exactly k kept); every token tied
#   with the cutoff probability is kept; a temperature of 0 raises ZeroDivisionError, not ValueError.
# expect: wrong next_token_probs top-p-before-temperature top-k-ties-dropped
# %% next_token_probs
import torch.nn.functional as F


def sample_logits(logits, temperature=1.0, top_p=None, top_k=0):
    probs = F.softmax(logits.float(), dim=-1)
    top_k = int(top_k)
    sorted_ids = torch.argsort(probs)
    if top_p is not None:
        sorted_probs = torch.flip(probs[sorted_ids], dims=(0,))
        cumulative_probs = torch.cumsum(sorted_probs, dim=-1)
        cutoff = float(sorted_probs[int(torch.argmax((cumulative_probs > top_p).int()))])
        probs[probs < cutoff] = 0
    if top_k < len(probs) and top_k > 0:
        probs[sorted_ids[:-top_k]] = 0
    if temperature != 1.0:
        probs = probs ** (1.0 / temperature)
    probs = probs / torch.sum(probs)
    return probs


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    rows = logits.reshape(-1, logits.shape[-1])
    out = torch.stack([sample_logits(row, temperature, top_p, 0 if top_k is None else top_k) for row in rows])
    return out.reshape(logits.shape)
