# lesson: 09_generating_text
# source: Lightning-AI/lit-llama generate.py 2a464de2a1d2f266614d15091d3d7f30330c3ede  (https://github.com/Lightning-AI/lit-llama/blob/2a464de2a1d2f266614d15091d3d7f30330c3ede/generate.py)
# licence: Apache-2.0
# bug report: none
# adapted: one (T,) prompt -> a (B, T) batch (index_select/index_copy on dim 1, logits[:, -1]); the model's KV
#   cache, kept inside lit-llama's model and addressed by input_pos, passed as the contract's `cache`
#   (model(x, max_seq_length, input_pos) -> model(x, cache)); eos_id, max_seq_length and XLA dropped; the
#   contract's temperature 0 (greedy) added, and its `generator` passed to torch.multinomial. Real behaviour
#   kept: @torch.no_grad(), the prompt once then one token at a time, top-k as lit-llama does it; no
#   model.eval() (lit-llama's main() calls it before generate); top_p accepted and ignored (no catalogue id).
# expect: wrong generate generate-train-mode
# %% generate
@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    B, T = idx.shape
    T_new = T + max_new_tokens
    device, dtype = idx.device, idx.dtype
    # create an empty tensor of the expected final shape and fill in the current tokens
    empty = torch.empty(B, T_new, dtype=dtype, device=device)
    empty[:, :T] = idx
    idx = empty
    input_pos = torch.arange(0, T, device=device)
    cache = None

    # generate max_new_tokens tokens
    for _ in range(max_new_tokens):
        x = idx.index_select(1, input_pos)

        # forward
        logits, cache = model(x, cache)
        if temperature == 0:
            idx_next = logits[:, -1].argmax(dim=-1, keepdim=True).to(dtype=dtype)
        else:
            logits = logits[:, -1] / temperature

            # optionally crop the logits to only the top k options
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits = torch.where(logits < v[:, [-1]], -float("Inf"), logits)

            probs = torch.nn.functional.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=generator).to(dtype=dtype)

        # advance
        input_pos = input_pos[-1:] + 1

        # concatenate the new generation
        idx = idx.index_copy(1, input_pos, idx_next)

    return idx
