# lesson: 08_fast_attention
# source: QiGoki/MyLLaMA2 Attention.py 2f6eb97a94830513e75e2285fb8546f05d9543b9
# adapted: taken as it is; it has the contract's name and arguments.
# bug report: written for LLaMA's (batch, seq, n_kv_heads, head_dim) layout, it repeats axis 2; given the
# bug report: contract's (B, h_kv, T, d_k) it repeats every time step instead of every head.
# expect: wrong repeat_kv kv-repeat-wrong-axis
# %% repeat_kv
def repeat_kv(x:torch.Tensor, n_rep:int):
    bs, slen, n_kv_heads, head_dim = x.shape
    if n_rep == 1:
        return x
    return (
        x[:,:,:,None,:]
        .expand(bs, slen, n_kv_heads,n_rep, head_dim)
        .reshape(bs, slen, n_kv_heads * n_rep, head_dim)
    )
