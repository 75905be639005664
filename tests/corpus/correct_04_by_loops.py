# lesson: 04_worked_example
# expect: correct
# Plain loops for every product; the errors found by comparing with PUBLISHED.
# %% worked_example
import math

def worked_example():
    def matmul(a, b):
        return np.array([[sum(a[i][t] * b[t][j] for t in range(len(b))) for j in range(len(b[0]))]
                         for i in range(len(a))])
    def softmax_rows(s):
        out = []
        for row in s:
            m = max(row)
            e = [math.exp(x - m) for x in row]
            out.append([x / sum(e) for x in e])
        return np.array(out)
    out = {}
    for i, ws in ((1, (W_Q1, W_K1, W_V1)), (2, (W_Q2, W_K2, W_V2))):
        q, k, v = (matmul(X, w) for w in ws)
        s = matmul(q, k.T) / math.sqrt(D_K)
        a = softmax_rows(s)
        out |= {f"Q{i}": q, f"K{i}": k, f"V{i}": v, f"scores{i}": s, f"weights{i}": a, f"head{i}": matmul(a, v)}
    out["concat"] = np.concatenate((out["head1"], out["head2"]), axis=1)
    return out
# %% published_errors
def published_errors():
    mine = worked_example()
    return {k for k in PUBLISHED if np.abs(PUBLISHED[k] - mine[k]).max() > 5e-5}
