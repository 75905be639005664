# lesson: 08_fast_attention
# source: Decalogue/flyllm llm/GQA.md f50e6874b440f0153c85ab67850eb11fd13b48e3
# adapted: the page's "one line of code" for GQA, `k = k.repeat_interleave(h//g, dim=0)`, as repeat_kv.
# bug report: dim=0 is the batch axis of (B, h_kv, T, d_k): it repeats whole sequences, not key/value heads.
# expect: wrong repeat_kv kv-repeat-wrong-axis
# %% repeat_kv
def repeat_kv(x, n_rep):
    return x.repeat_interleave(n_rep, dim=0)
