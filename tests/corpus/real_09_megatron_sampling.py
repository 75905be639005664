# lesson: 09_generating_text
# source: NVIDIA/Megatron-LM megatron/text_generation/sampling.py 6fd0b406740cf121ead37f31ab69a0e0914411d4  (https://github.com/NVIDIA/Megatron-LM/blob/6fd0b406740cf121ead37f31ab69a0e0914411d4/megatron/text_generation/sampling.py)
# licence: Apache-2.0
# bug report: none
# adapted: sample(logits, top_k, top_p, temperature) as the contract's next_token_probs: the distribution returned
#   instead of drawn from; None for top_k/top_p mapped to Megatron's 0 and 0.0; logits with any leading axes
#   flattened to the [b, v] Megatron asserts and reshaped back; the CUDA type assertion and vocab_size dropped.
#   Real behaviour kept: top-k and top-p are refused together (AssertionError), so is a top_k above the
#   vocabulary, top_k == 1 is an argmax (one-hot here: exactly one token kept, so tokens tied with the largest are
#   dropped: top-k-ties-dropped), and a temperature <= 0 is not refused.
# expect: wrong next_token_probs top-k-ties-dropped
# %% next_token_probs
def modify_logits_for_top_k_filtering(logits, top_k):
    """Set the logits for none top-k values to -inf."""

    filter_ = logits < torch.topk(logits, top_k)[0][..., -1, None]
    logits.masked_fill_(filter_, float('-Inf'))


def modify_logits_for_top_p_filtering(logits, top_p):
    """Set the logits for none top-p values to -inf."""

    # First sort and calculate cumulative sum of probabilities.
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

    # Filteration based on the cumulative sum.
    filter_ = cumulative_probs > top_p
    # This shift by 1 is weird and I cannot justify it. This existed
    # in the original implementation:
    #   https://github.com/ari-holtzman/degen/blob/master/gen.py
    # and I guess it is needed so keeping it for now.
    filter_[:, 1:] = filter_[:, :-1].clone()
    # Make sure we at least have one token to select from.
    filter_[..., 0] = 0

    # Fill in the filtered part
    filter_ = filter_.scatter(1, sorted_indices, filter_)
    logits.masked_fill_(filter_, float('-Inf'))


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    top_k = 0 if top_k is None else top_k
    top_p = 0.0 if top_p is None else top_p
    shape = logits.shape
    logits = logits.reshape(-1, shape[-1])
    assert logits.ndim == 2, 'expected the logits to be of [b, v] shape.'

    # Greedy is just simple argmax.
    if top_k == 1:
        assert top_p == 0.0, 'cannot set both greedy and top-p samplings.'
        probs = torch.nn.functional.one_hot(torch.argmax(logits, dim=-1), logits.size(1)).to(logits.dtype)

    # Top-k or top-p sampling.
    else:
        # Clone so we do not modify the inputs,
        logits = logits.clone()
        # Apply temperature in place.
        if temperature != 1.0:
            logits.div_(temperature)

        if top_k > 1:
            assert top_p == 0.0, 'cannot set both top-k and top-p samplings.'
            assert top_k <= logits.size(1), 'top-k is larger than logit size.'
            modify_logits_for_top_k_filtering(logits, top_k)

        elif top_p > 0.0:
            assert top_p <= 1.0, 'top-p should be in (0, 1].'
            modify_logits_for_top_p_filtering(logits, top_p)

        # After filtering, we need to recalculate the distribution.
        probs = logits.softmax(dim=-1)
    return probs.reshape(shape)
