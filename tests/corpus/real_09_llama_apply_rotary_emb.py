# lesson: 09_generating_text
# source: meta-llama/llama llama/model.py 8580eb9a896bdb82d376b7040d18a2e7b402b10f  (https://github.com/meta-llama/llama/blob/8580eb9a896bdb82d376b7040d18a2e7b402b10f/llama/model.py)
# bug report: none upstream (Meta's checkpoints were trained with this layout; Hugging Face permutes the q/k weights when converting them to rotate-half)
# adapted: precompute_freqs_cis(dim, end, theta) -> the same lines with t = positions instead of arange(end);
#   apply_rotary_emb(xq, xk, freqs_cis) -> one tensor x; reshape_for_broadcast dropped (freqs_cis (T, d/2) already
#   broadcasts against (..., T, d/2)); flatten(3) -> flatten(-2) (any number of leading axes).
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def apply_rope(x, positions, base=10000.0):
    dim = x.shape[-1]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = positions.to(freqs.device)
    freqs = torch.outer(t, freqs).float()
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    x_out = torch.view_as_real(x_ * freqs_cis).flatten(-2)
    return x_out.type_as(x)
