"""The mistake catalogue: the one place that says what each named mistake is.

Diagnosis (compare.py and the checks), the feedback students read, the test corpus and the
book's "common mistakes" page all read this table. The ids of ../shared/COURSE_SPEC.md are
fixed; the entries after them are this course's additions.

Each entry: a title, what the student's code does (`explanation`), how to fix it (`hint`),
and how the autograder recognises it (`recognised_by`).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mistake:
    id: str
    title: str
    explanation: str
    hint: str
    recognised_by: str


CATALOGUE: dict[str, Mistake] = {m.id: m for m in [
    Mistake(
        "not-implemented", "The stub is unchanged",
        "The function still raises NotImplementedError, so there is nothing to grade yet.",
        "Replace `raise NotImplementedError()` with your implementation, then run the self-check cell.",
        "the call raises NotImplementedError"),
    Mistake(
        "missing-scale", "Scores are not scaled",
        "The scores are Q K^T without the division by sqrt(d_k). With larger d_k the dot products grow, "
        "the softmax saturates and the weights become nearly one-hot.",
        "Divide the scores by `np.sqrt(d_k)` (or `math.sqrt(d_k)`), where d_k is q.shape[-1], before the softmax.",
        "the output equals attention computed with a scale of 1"),
    Mistake(
        "wrong-scale", "Scores are scaled by the wrong amount",
        "The scores are divided by d_k instead of sqrt(d_k), by sqrt(d_model) instead of the per-head "
        "size, or multiplied instead of divided.",
        "Use `scores / sqrt(d_k)` with d_k the size of one head's keys: the last dimension of the keys "
        "after the heads are split.",
        "the output equals attention computed with scale 1/d_k, d_k, sqrt(d_k) or 1/sqrt(d_model)"),
    Mistake(
        "softmax-wrong-axis", "Softmax over the wrong axis",
        "The softmax normalises over the queries (axis -2) instead of over the keys (axis -1), so each "
        "query's weights do not sum to 1.",
        "Normalise over the last axis: each row of the weights (one query) must sum to 1.",
        "the output equals softmax taken over axis -2 (or another axis than asked)"),
    Mistake(
        "softmax-unstable", "Softmax overflows for large inputs",
        "exp() of a large score overflows to inf and inf/inf gives NaN. Softmax is unchanged when a "
        "constant is subtracted from every input, so subtracting the maximum avoids it.",
        "Subtract `x.max(axis=axis, keepdims=True)` from x before `np.exp`.",
        "inputs like 1e3 or 1e4 give NaN or inf where the reference gives finite numbers"),
    Mistake(
        "mask-inverted", "The mask is read the wrong way round",
        "The course's masks mark the pairs that MAY attend (True/1 = attend). Your code blocks those and "
        "lets the others through: the convention of nn.MultiheadAttention's attn_mask, which is the opposite.",
        "Block where the mask is False/0: `np.where(mask, scores, -np.inf)` or "
        "`scores.masked_fill(mask == 0, float('-inf'))`.",
        "the output equals attention computed with the logical NOT of the mask"),
    Mistake(
        "mask-after-softmax", "The mask is applied after the softmax",
        "Zeroing weights after the softmax leaves each row summing to less than 1 (the blocked keys' share "
        "is lost rather than given to the allowed keys).",
        "Mask the scores before the softmax: set blocked scores to -inf, then take the softmax.",
        "the output equals softmax(scores) * mask, without renormalising"),
    Mistake(
        "masked-row-nan", "A fully blocked row gives NaN",
        "When every key is blocked for a query, a -inf fill gives exp(-inf - (-inf)) = NaN in the softmax.",
        "After the softmax, replace the weights of rows with no allowed key by zeros, for example "
        "`np.where(mask.any(axis=-1, keepdims=True), weights, 0.0)` (and make sure no NaN reaches the output).",
        "NaN appears exactly in rows where the mask blocks every key"),
    Mistake(
        "masked-row-leak", "A fully blocked row still attends",
        "With a large negative fill such as -1e9 a fully blocked row gets uniform weights over keys that "
        "are all blocked, so the query reads values it must not see. The course asks for zero weights "
        "and a zero output there.",
        "Detect rows whose mask has no True and set their weights (and so their output) to zero.",
        "rows where the mask blocks every key get non-zero weights (typically uniform)"),
    Mistake(
        "causal-off-by-one", "The causal mask is off by one",
        "Query i must see keys 0..i, itself included. Your mask blocks the diagonal (a token cannot "
        "attend to itself) or lets key i+1 through (one step of the future leaks).",
        "Use `np.tril(np.ones((n, n), dtype=bool))`, or `j <= i` with j the key index and i the query index.",
        "the mask equals tril(k=-1) or tril(k=1)"),
    Mistake(
        "causal-transposed", "The causal mask looks at the future",
        "The mask is upper-triangular: query i may attend to keys j >= i, the future, and not to the past.",
        "Rows are queries and columns are keys: keep the lower triangle (`np.tril`), not the upper one.",
        "the mask equals the transpose of the correct one (upper-triangular)"),
    Mistake(
        "padding-wrong-axis", "Padding masks the queries instead of the keys",
        "A padding mask must stop every query from reading padded KEY positions, shape (batch, 1, max_len). "
        "Masking padded query rows instead leaves padded keys readable.",
        "Return shape (batch, 1, max_len) with `mask[b, 0, j] = j < lengths[b]`.",
        "the mask has shape (batch, max_len, 1), or its values mark query positions"),
    Mistake(
        "heads-mixed", "Heads mix positions",
        "Reshaping (B, T, d_model) straight to (B, h, T, d_k) with view/reshape, without the transpose, "
        "cuts the sequence into pieces instead of cutting each token's features into heads: each 'head' "
        "then holds parts of several positions.",
        "Reshape to (B, T, h, d_k) first, then `.transpose(1, 2)`; merging is the reverse: "
        "`.transpose(1, 2).reshape(B, T, h * d_k)`.",
        "the output equals split/merge done with a plain reshape and no transpose"),
    Mistake(
        "kv-reuse-query-projection", "Keys or values use the query projection",
        "Keys and/or values are computed with the query projection (w_q / q_project) instead of their own. "
        "Shapes are right and the model even trains, but the key and value projections are never used: "
        "they get no gradient and changing them changes nothing.",
        "Compute K with the key projection on the keys and V with the value projection on the values.",
        "the output equals the reference with W_K and/or W_V replaced by W_Q, and changing W_K/W_V "
        "leaves the output unchanged"),
    Mistake(
        "missing-output-projection", "No output projection",
        "The concatenated heads are returned without passing through w_o, so the heads are never mixed.",
        "Return `self.w_o(concat)`.",
        "the output equals the merged heads before w_o"),
    Mistake(
        "dropout-in-eval", "Dropout is active in eval mode",
        "After model.eval() dropout must do nothing; your module still drops (or rescales) attention "
        "weights, so inference is random and wrong.",
        "Use an `nn.Dropout` module (it switches off in eval mode) or pass `training=self.training` to "
        "`F.dropout`.",
        "in eval mode the output with dropout=0.5 differs from the output with dropout=0"),
    Mistake(
        "input-modified", "The input was changed in place",
        "The function modified an array it was given (for example `x -= x.max()` or `scores[~mask] = ...` "
        "on the caller's data). The caller's data is silently corrupted.",
        "Work on new arrays: `x = x - x.max(...)` instead of `x -= ...`, or copy first.",
        "an argument differs after the call from what was passed in"),
    Mistake(
        "wrong-shape", "The output has the wrong shape",
        "The result's shape differs from the one the docstring asks for.",
        "Check the shapes in the docstring; print `.shape` after each step.",
        "the shape differs from the reference's and matches no other catalogued mistake"),
    # --- the course's additions ---------------------------------------------------------------
    Mistake(
        "wrong-signature", "The function does not accept the documented arguments",
        "Calling it the way the docstring says raised a TypeError about its arguments.",
        "Keep the signature of the stub exactly (names, order and defaults of the arguments).",
        "the call raises TypeError naming an argument"),
    Mistake(
        "wrong-type", "The result is not of the expected type",
        "The function returned something other than what the docstring asks for (for example a list "
        "instead of an array, or a tuple where one array is expected).",
        "Return exactly the type the docstring names.",
        "the returned value is not an array/tensor/dict/set as required"),
    Mistake(
        "time-limit", "Too slow, or never finishes",
        "The code did not finish within the time limit (default 10 s per exercise); usually an endless "
        "loop or a Python loop over a large array.",
        "Look for loops that never end; use vectorised NumPy/PyTorch operations.",
        "the worker process is still running at the deadline"),
    Mistake(
        "memory-limit", "Too much memory",
        "The code asked for more memory than the limit (default 2 GiB).",
        "Look for arrays much larger than the inputs (an accidental outer product or broadcast).",
        "the worker process hit its memory limit"),
    Mistake(
        "process-exit", "The code ended the process",
        "The code called sys.exit/os._exit, raised SystemExit or KeyboardInterrupt, or crashed the "
        "interpreter, so the exercise could not be checked.",
        "Remove exit() calls and anything that stops the process.",
        "the worker process stopped or SystemExit/KeyboardInterrupt was raised"),
    Mistake(
        "test-misses-bug", "Your test does not catch the bug",
        "The test returned normally for a class whose keys and/or values use the query projection: it "
        "does not check anything that the bug changes (checking only shapes is not enough).",
        "Compare outputs with nn.MultiheadAttention after copying weights, or check that k_project and "
        "v_project receive gradients / that changing their weights changes the output.",
        "the student's test_projections returns normally for a buggy class"),
    Mistake(
        "test-rejects-correct", "Your test fails a correct class",
        "The test raised for a correct implementation, so it cannot tell right from wrong.",
        "Make sure your test passes on FixedMultiHeadAttention (and on any other correct implementation), "
        "with tolerances like atol=1e-5 for float32.",
        "the student's test_projections raises for a correct class"),
]}


def describe(mistake_id: str) -> str:
    """One paragraph for a student: what the mistake is and how to fix it."""
    m = CATALOGUE[mistake_id]
    return f"This looks like '{m.id}' ({m.title.lower()}): {m.explanation} Fix: {m.hint}"
