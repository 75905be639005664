# lesson: 09_generating_text
# source: tinygrad/tinygrad extra/models/llama.py 905d3b2cc694a35db62dfee8a7a9c520df54cde9  (https://github.com/tinygrad/tinygrad/blob/905d3b2cc694a35db62dfee8a7a9c520df54cde9/extra/models/llama.py)
# licence: MIT
# bug report: none (tinygrad's Llama loads checkpoints permuted for this layout; the contract is rotate-half)
# adapted: precompute_freqs_cis(dim, end, theta) and apply_rotary_emb(xq, xk, freqs_cis) from tinygrad Tensors to
#   torch (Tensor.arange -> torch.arange, .cat -> torch.cat, .half() -> .half()); the table built at `positions`
#   (tinygrad shrinks it to start_pos..start_pos+seqlen) and shaped (T, d/2, 2) for x of shape (..., T, d)
#   instead of (1, T, 1, d/2, 2); one tensor x instead of xq and xk. Real behaviour kept: neighbouring features
#   paired (GPT-J layout), the cos/sin table rounded to float16, the output in x's dtype after that product.
# Named since issue 32's third round: the float16 table puts every value ~1e-3 away from the interleaved
#   fingerprint, within float16's rounding of it (grading/tolerances.py, float16), not float32's.
# expect: wrong apply_rope rope-interleaved
# %% apply_rope
def precompute_freqs_cis(dim, positions, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[:(dim // 2)] / dim))
    freqs = torch.as_tensor(positions).unsqueeze(dim=1) * freqs.unsqueeze(dim=0)
    return torch.stack([freqs.cos().half(), freqs.sin().half()], dim=-1).reshape(len(positions), dim // 2, 2)


# (a+i*b) * (c+i*d) = (ac-bd) + i*(ad+bc)
def complex_mult(A, c, d):
    a, b = A[..., 0:1], A[..., 1:2]
    ro = a * c - b * d
    co = a * d + b * c
    return torch.cat([ro, co], dim=-1)


def apply_rope(x, positions, base=10000.0):
    freqs_cis = precompute_freqs_cis(x.shape[-1], positions, base)
    xq = x.reshape(*x.shape[0:-1], -1, 2)
    c, d = freqs_cis[..., 0:1].to(x.dtype), freqs_cis[..., 1:2].to(x.dtype)
    xq_out = complex_mult(xq, c, d)
    return xq_out.flatten(-2)
