# lesson: 04_worked_example
# expect: wrong worked_example weights-transposed
# Walkthrough: X @ W.T instead of X @ W.
# %% worked_example
def worked_example():
    out = {}
    for i, (WQ, WK, WV) in enumerate([(W_Q1, W_K1, W_V1), (W_Q2, W_K2, W_V2)], start=1):
        Q, K, V = X @ WQ.T, X @ WK.T, X @ WV.T          # (3, 2): nn.Linear's convention
        S = Q @ K.T / np.sqrt(D_K)
        A = np.exp(S - S.max(-1, keepdims=True)); A /= A.sum(-1, keepdims=True)
        out.update({f"Q{i}": Q, f"K{i}": K, f"V{i}": V, f"scores{i}": S, f"weights{i}": A, f"head{i}": A @ V})
    out["concat"] = np.concatenate([out["head1"], out["head2"]], axis=-1)
    return out
