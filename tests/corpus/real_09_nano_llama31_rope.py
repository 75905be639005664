# lesson: 09_generating_text
# source: karpathy/nano-llama31 llama31.py 06461cada7744a7da86a408f094549800b6bee3f  (https://github.com/karpathy/nano-llama31/blob/06461cada7744a7da86a408f094549800b6bee3f/llama31.py)
# licence: none stated in the repository at that commit (adapted from Meta's Llama 3.1 code, Llama 3.1 Community License)
# bug report: none (Llama's checkpoints are stored for this layout; the course's contract is rotate-half)
# adapted: precompute_freqs_cis(dim, end, theta, use_scaled) evaluated at `positions` (nano-llama31 slices its
#   table at start_pos..start_pos+seqlen), use_scaled=False; apply_rotary_emb(x, freqs_cis) for x of shape
#   (..., T, d) with the table viewed as (T, d/2, 2) instead of (1, T, 1, d/2, 2) for (B, T, h, d). Real
#   behaviour kept: neighbouring features paired (GPT-J layout), computed in float32 whatever x's dtype, an odd d
#   failing in reshape (RuntimeError, not ValueError).
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def precompute_freqs_cis(dim, positions, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.as_tensor(positions).to(torch.float32)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    freqs_cis_real = torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1)
    return freqs_cis_real


def apply_rope(x, positions, base=10000.0):
    freqs_cis = precompute_freqs_cis(x.shape[-1], positions, base)
    # shape gymnastics let's go
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
