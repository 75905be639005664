# lesson: 08_fast_attention
# expect: correct
# source: meta-llama/llama3 llama/model.py 453ae54806ac9bd4ea793dfecd2b2f27ece5f9cf
# adapted: Llama's repeat_kv works on (bs, slen, n_kv_heads, head_dim) and adds the new axis after the
# adapted: heads (x[:, :, :, None, :]); here the heads are axis 1, as the contract's (B, h_kv, T, d_k) has them.
# %% repeat_kv
def repeat_kv(x, n_rep):
    """torch.repeat_interleave(x, dim=1, repeats=n_rep)"""
    bs, n_kv_heads, slen, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:, :, None, :, :]
        .expand(bs, n_kv_heads, n_rep, slen, head_dim)
        .reshape(bs, n_kv_heads * n_rep, slen, head_dim)
    )
