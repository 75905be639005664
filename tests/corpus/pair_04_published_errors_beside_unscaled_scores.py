# lesson: 04_worked_example
# expect: wrong worked_example missing-scale
# expect: full published_errors
# The reference's published_errors (the solution's cell) beside the worked_example of wrong_04_unscaled_scores.py: published_errors calls
# worked_example, and is graded with the reference worked_example in place of the wrong one (issue 32).
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
# %% published_errors
def published_errors():
    """The keys of worked_example() whose values, as printed in the publication, are wrong.

    Uses PUBLISHED from the setup cell (only the keys that were printed; the values are given
    to 4 decimals, so a printed value is right when within 5e-5 of the correct one).

    Returns:
        A set of key names, for example {"K1", ...}.
    """
    correct = worked_example()
    return {key for key, printed in PUBLISHED.items()
            if not np.allclose(printed, correct[key], rtol=0, atol=5e-5)}
