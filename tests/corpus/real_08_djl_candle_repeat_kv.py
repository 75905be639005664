# lesson: 08_fast_attention
# source: deepjavalibrary/djl extensions/tokenizers/rust/src/utils.rs 291de8d2d88b2e820163c85c73a1fbd01eba727b
# adapted: candle's Rust (Tensor::cat of n_rep copies along the sequence axis, then a reshape) written with the
# adapted: same torch calls.
# expect: correct
# %% repeat_kv
def repeat_kv(x, n_rep):
    if n_rep == 1:
        return x
    b_sz, n_kv_head, seq_len, head_dim = x.shape
    # Using cat is faster than a broadcast as it avoids going through a potentially strided copy.
    return torch.cat([x] * n_rep, dim=2).reshape(b_sz, n_kv_head * n_rep, seq_len, head_dim)
