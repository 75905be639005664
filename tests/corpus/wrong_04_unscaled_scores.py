# lesson: 04_worked_example
# expect: wrong worked_example missing-scale
# %% worked_example
def worked_example():
    def softmax(s):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    out = {}
    for i, (wq, wk, wv) in enumerate([(W_Q1, W_K1, W_V1), (W_Q2, W_K2, W_V2)], start=1):
        q, k, v = X @ wq, X @ wk, X @ wv
        s = q @ k.T                                   # forgot / sqrt(d_k), as the publication did
        out.update({f"Q{i}": q, f"K{i}": k, f"V{i}": v, f"scores{i}": s,
                    f"weights{i}": softmax(s), f"head{i}": softmax(s) @ v})
    out["concat"] = np.hstack([out["head1"], out["head2"]])
    return out
