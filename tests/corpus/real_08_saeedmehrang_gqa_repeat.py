# lesson: 08_fast_attention
# source: saeedmehrang/saeedmehrang.github.io content/blogs/grouped-query-attention/index.md 7558166e1e61f5ee52248b40fb5667e36a595932
# adapted: the blog's GroupedQueryAttention repeats K and V inline; those lines as the contract's repeat_kv.
# expect: correct
# %% repeat_kv
def repeat_kv(x, n_rep):
    # Each KV head is shared by num_queries_per_kv query heads
    return x.repeat_interleave(n_rep, dim=1)
