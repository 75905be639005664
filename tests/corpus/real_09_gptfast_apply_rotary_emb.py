# lesson: 09_generating_text
# source: pytorch-labs/gpt-fast model.py 32971d3129541c5bfb4f715abc33d1c5f408d204  (https://github.com/pytorch-labs/gpt-fast/blob/32971d3129541c5bfb4f715abc33d1c5f408d204/model.py)
# licence: BSD-3-Clause (Copyright 2023 Meta)
# bug report: none (Llama's checkpoints store q and k for this layout; the course's contract is rotate-half)
# adapted: precompute_freqs_cis(seq_len, n_elem, base) evaluated at `positions` instead of 0..seq_len-1 (gpt-fast
#   indexes its table with input_pos), float32 instead of bfloat16, rope_scaling dropped; apply_rotary_emb(x,
#   freqs_cis) with the table viewed as (T, d/2, 2) for x of shape (..., T, d) instead of (1, T, 1, d/2, 2) for
#   (B, T, h, d). Real behaviour kept: neighbouring features are paired (GPT-J layout), the rotation is computed in
#   float32 whatever x's dtype, and an odd d raises a RuntimeError from reshape, not a ValueError.
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def precompute_freqs_cis(positions, n_elem, base=10000):
    freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2)[: (n_elem // 2)].float() / n_elem))
    t = torch.as_tensor(positions)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    cache = torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1)
    return cache


def apply_rope(x, positions, base=10000.0):
    freqs_cis = precompute_freqs_cis(positions, x.shape[-1], base)
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    freqs_cis = freqs_cis.view(xshaped.size(-3), xshaped.size(-2), 2)
    x_out2 = torch.stack(
        [
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
        ],
        -1,
    )

    x_out2 = x_out2.flatten(-2)
    return x_out2.type_as(x)
