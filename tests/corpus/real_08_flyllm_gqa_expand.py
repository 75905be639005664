# lesson: 08_fast_attention
# source: Decalogue/flyllm llm/GQA.md f50e6874b440f0153c85ab67850eb11fd13b48e3
# adapted: the page's "manual implementation" (unsqueeze, expand, reshape of K and V) as the contract's repeat_kv
# adapted: (h//g -> n_rep).
# expect: correct
# %% repeat_kv
def repeat_kv(x, n_rep):
    batch, g, seq, d_k = x.shape
    h = g * n_rep
    return x.unsqueeze(2).expand(-1, -1, h // g, -1, -1).reshape(batch, h, seq, d_k)
