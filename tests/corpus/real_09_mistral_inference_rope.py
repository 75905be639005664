# lesson: 09_generating_text
# source: mistralai/mistral-inference src/mistral_inference/rope.py 2557e12d0e1878a1562ece30434820f80aa3e12a  (https://github.com/mistralai/mistral-inference/blob/2557e12d0e1878a1562ece30434820f80aa3e12a/src/mistral_inference/rope.py)
# licence: Apache-2.0
# bug report: none (Mistral's checkpoints are stored for this layout; the course's contract is rotate-half)
# adapted: precompute_freqs_cis(dim, end, theta) then indexed by `positions` (mistral-inference indexes its
#   table with the tokens' positions); apply_rotary_emb(xq, xk, freqs_cis) for one tensor x, the table
#   broadcast over x's leading axes instead of freqs_cis[:, None, :] for (T, h, d). Real behaviour kept: complex
#   pairs of neighbouring features (the GPT-J layout), float32 whatever x's dtype, a RuntimeError for an odd d.
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def precompute_freqs_cis(dim, end, theta):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def apply_rope(x, positions, base=10000.0):
    positions = torch.as_tensor(positions)
    freqs_cis = precompute_freqs_cis(x.shape[-1], int(positions.max()) + 1, base)[positions]
    x_ = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    x_out = torch.view_as_real(x_ * freqs_cis).flatten(-2)
    return x_out.type_as(x)
