# lesson: 09_generating_text
# source: tinygrad/tinygrad extra/models/llama.py 905d3b2cc694a35db62dfee8a7a9c520df54cde9  (https://github.com/tinygrad/tinygrad/blob/905d3b2cc694a35db62dfee8a7a9c520df54cde9/extra/models/llama.py)
# licence: MIT
# bug report: none (tinygrad's Llama samples with a temperature only)
# adapted: the sampling at the end of Transformer.forward, `(logits / temperature).softmax().multinomial()`, from
#   tinygrad Tensors to torch as the contract's next_token_probs, the softmax returned instead of drawn from;
#   added: the contract's ValueError for temperature <= 0 (tinygrad takes the argmax below 1e-6). Real behaviour
#   kept: top_k and top_p accepted and ignored (no catalogue id).
# expect: wrong next_token_probs -
# %% next_token_probs
def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    if not temperature > 0:
        raise ValueError("temperature must be > 0")
    return (logits / temperature).softmax(-1)
