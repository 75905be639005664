# lesson: 09_generating_text
# source: Lightning-AI/lit-llama lit_llama/model.py 2a464de2a1d2f266614d15091d3d7f30330c3ede  (https://github.com/Lightning-AI/lit-llama/blob/2a464de2a1d2f266614d15091d3d7f30330c3ede/lit_llama/model.py)
# licence: Apache-2.0
# bug report: none (lit-llama's checkpoints are converted for this layout; the course's contract is rotate-half)
# adapted: build_rope_cache(seq_len, n_elem, dtype, device, base) built up to the largest position and indexed
#   by `positions` (lit-llama's model does rope_cache.index_select(0, input_pos) before apply_rope);
#   apply_rope(x, rope_cache) for x of shape (..., T, d) with the cache viewed as (T, d/2, 2) instead of
#   (1, T, 1, d/2, 2) for (B, T, h, d). Real behaviour kept: neighbouring features paired (GPT-J layout),
#   computed in float32 whatever x's dtype, an odd d failing in reshape (RuntimeError, not ValueError).
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def build_rope_cache(seq_len, n_elem, dtype, device=None, base=10000):
    # $\Theta = {\theta_i = 10000^{\frac{2(i-1)}{d}}, i \in [1, 2, ..., \frac{d}{2}]}$
    theta = 1.0 / (base ** (torch.arange(0, n_elem, 2, dtype=dtype, device=device) / n_elem))

    # Create position indexes `[0, 1, ..., seq_len - 1]`
    seq_idx = torch.arange(seq_len, dtype=dtype, device=device)

    # Calculate the product of position index and $\theta_i$
    idx_theta = torch.outer(seq_idx, theta).float()

    cache = torch.stack([torch.cos(idx_theta), torch.sin(idx_theta)], dim=-1)

    # this is to mimic the behaviour of complex32, else we will get different results
    if dtype in (torch.float16, torch.bfloat16, torch.int8):
        cache = cache.half()
    return cache


def apply_rope(x, positions, base=10000.0):
    positions = torch.as_tensor(positions)
    rope_cache = build_rope_cache(int(positions.max()) + 1, x.shape[-1], torch.float32, base=base)
    rope_cache = rope_cache.index_select(0, positions)
    T = x.size(-2)
    rope_cache = rope_cache[:T]

    # cast because the reference does
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    rope_cache = rope_cache.view(xshaped.size(-3), xshaped.size(-2), 2)
    x_out2 = torch.stack(
        [
            xshaped[..., 0] * rope_cache[..., 0] - xshaped[..., 1] * rope_cache[..., 1],
            xshaped[..., 1] * rope_cache[..., 0] + xshaped[..., 0] * rope_cache[..., 1],
        ],
        -1,
    )

    x_out2 = x_out2.flatten(-2)
    return x_out2.type_as(x)
