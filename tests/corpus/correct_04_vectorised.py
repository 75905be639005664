# lesson: 04_worked_example
# expect: correct
# Both heads at once with stacked weight matrices and einsum.
# %% worked_example
def worked_example():
    W = np.stack([np.stack([W_Q1, W_K1, W_V1]), np.stack([W_Q2, W_K2, W_V2])])     # (2 heads, 3, 2, 2)
    P = np.einsum("td,hrde->hrte", X, W)                                             # (2, 3, 3 tokens, 2)
    Q, K, V = P[:, 0], P[:, 1], P[:, 2]
    S = Q @ np.transpose(K, (0, 2, 1)) / np.sqrt(D_K)
    A = np.exp(S - S.max(-1, keepdims=True)); A /= A.sum(-1, keepdims=True)
    H = A @ V
    out = {"concat": np.concatenate(list(H), axis=-1)}
    for i in range(2):
        out.update({f"Q{i+1}": Q[i], f"K{i+1}": K[i], f"V{i+1}": V[i], f"scores{i+1}": S[i],
                    f"weights{i+1}": A[i], f"head{i+1}": H[i]})
    return out
