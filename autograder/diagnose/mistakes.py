"""The mistake catalogue: the one place that says what each named mistake is.

Diagnosis (compare.py and the checks), the feedback students read, the test corpus and the
book's "common mistakes" page all read this table. The ids of ../shared/COURSE_SPEC.md are
fixed; the entries after them are this course's additions.

Each entry: a title, what the student's code does (`explanation`), how to fix it (`hint`),
and how the autograder recognises it (`recognised_by`).
"""
from __future__ import annotations

from dataclasses import dataclass

from autograder.i18n import C_


@dataclass(frozen=True)
class Mistake:
    id: str
    title: str
    explanation: str
    hint: str
    recognised_by: str


CATALOGUE: dict[str, Mistake] = {m.id: m for m in [
    Mistake(
        "not-implemented", C_("title", "The stub is unchanged"),
        C_("explanation", "The function still raises NotImplementedError, so there is nothing to grade yet."),
        C_("hint", "Replace `raise NotImplementedError()` with your implementation, then run the self-check cell."),
        "the call raises NotImplementedError"),
    Mistake(
        "missing-scale", C_("title", "Scores are not scaled"),
        C_("explanation", "Unscaled dot products grow with d_k, so the softmax saturates and the weights become nearly "
        "one-hot."),
        C_("hint", "Divide the scores by `np.sqrt(d_k)` (or `math.sqrt(d_k)`), where d_k is q.shape[-1], before the softmax."),
        "the output equals attention computed with a scale of 1"),
    Mistake(
        "wrong-scale", C_("title", "Scores are scaled by the wrong amount"),
        C_("explanation", "The dot product of two vectors of size d_k grows like sqrt(d_k), so dividing by exactly sqrt(d_k) "
        "keeps the scores' spread near 1 whatever the size; any other factor makes the softmax too flat or "
        "too peaked."),
        C_("hint", "Use `scores / sqrt(d_k)`, with d_k the size of one key vector (the last dimension of the keys "
        "that meet the queries in the dot product)."),
        "the output equals attention computed with scale 1/d_k, d_k, sqrt(d_k) or 1/sqrt(d_model)"),
    Mistake(
        "softmax-wrong-axis", C_("title", "Softmax over the wrong axis"),
        C_("explanation", "Each query's weights must sum to 1 over the keys, the last axis of the scores. Normalised over "
        "another axis, they do not, and every output mixes the values with the wrong weights."),
        C_("hint", "Normalise over the last axis: each row of the weights (one query) must sum to 1."),
        "the output equals softmax taken over axis -2 (or another axis than asked)"),
    Mistake(
        "softmax-unstable", C_("title", "Softmax overflows for large inputs"),
        C_("explanation", "exp() of a large score overflows to inf and inf/inf gives NaN. Softmax is unchanged when a "
        "constant is subtracted from every input, so subtracting the maximum avoids it."),
        C_("hint", "Subtract `x.max(axis=axis, keepdims=True)` from x before `np.exp`."),
        "inputs like 1e3 or 1e4 give NaN or inf where the reference gives finite numbers"),
    Mistake(
        "mask-inverted", C_("title", "The mask is read the wrong way round"),
        C_("explanation", "The course's masks mark the pairs that MAY attend (True/1 = attend). Your code blocks those and "
        "lets the others through: the convention of nn.MultiheadAttention's attn_mask, which is the opposite."),
        C_("hint", "Block where the mask is False/0: `np.where(mask, scores, -np.inf)` or "
        "`scores.masked_fill(mask == 0, float('-inf'))`."),
        "the output equals attention computed with the logical NOT of the mask"),
    Mistake(
        "mask-after-softmax", C_("title", "The mask is applied after the softmax"),
        C_("explanation", "Zeroing weights after the softmax leaves each row summing to less than 1 (the blocked keys' share "
        "is lost rather than given to the allowed keys)."),
        C_("hint", "Mask the scores before the softmax: set blocked scores to -inf, then take the softmax."),
        "the output equals softmax(scores) * mask, without renormalising"),
    Mistake(
        "masked-row-nan", C_("title", "A fully blocked row gives NaN"),
        C_("explanation", "When every key is blocked for a query, a -inf fill gives exp(-inf - (-inf)) = NaN in the softmax."),
        C_("hint", "After the softmax, replace the weights of rows with no allowed key by zeros, for example "
        "`np.where(mask.any(axis=-1, keepdims=True), weights, 0.0)` (and make sure no NaN reaches the output)."),
        "NaN appears exactly in rows where the mask blocks every key"),
    Mistake(
        "masked-row-leak", C_("title", "A fully blocked row still attends"),
        C_("explanation", "When every key of a row is blocked, a finite fill leaves the softmax uniform weights over "
        "those blocked keys, so the query reads values it must not see. The course asks for zero weights "
        "and a zero output there."),
        C_("hint", "Detect rows whose mask has no True and set their weights (and so their output) to zero."),
        "rows where the mask blocks every key get non-zero weights (typically uniform)"),
    Mistake(
        "causal-off-by-one", C_("title", "The causal mask is off by one"),
        C_("explanation", "Query i must see keys 0..i, itself included, and nothing after."),
        C_("hint", "Use `np.tril(np.ones((n, n), dtype=bool))`, or `j <= i` with j the key index and i the query index."),
        "the mask equals tril(k=-1) or tril(k=1)"),
    Mistake(
        "causal-transposed", C_("title", "The causal mask looks at the future"),
        C_("explanation", "The mask is upper-triangular: query i may attend to keys j >= i, the future, and not to the past."),
        C_("hint", "Rows are queries and columns are keys: keep the lower triangle (`np.tril`), not the upper one."),
        "the mask equals the transpose of the correct one (upper-triangular)"),
    Mistake(
        "padding-wrong-axis", C_("title", "Padding masks the queries instead of the keys"),
        C_("explanation", "A padding mask must stop every query from reading padded KEY positions. Masking padded query "
        "rows instead leaves padded keys readable."),
        C_("hint", "Return shape (batch, 1, max_len) with `mask[b, 0, j] = j < lengths[b]`."),
        "the mask has shape (batch, max_len, 1), or its values mark query positions"),
    Mistake(
        "heads-mixed", C_("title", "Heads mix positions"),
        C_("explanation", "Going between (B, T, d_model) and (B, h, T, d_k) takes a reshape and a transpose. A plain "
        "view/reshape splits the sequence into pieces instead of each token's features into heads, and "
        "merges the heads back in the wrong order: each 'head', or each output position, then holds parts "
        "of several positions."),
        C_("hint", "Split: reshape to (B, T, h, d_k), then `.transpose(1, 2)`. Merge: `.transpose(1, 2)` first, then "
        "`.reshape(B, T, h * d_k)`."),
        "the output equals split/merge done with a plain reshape and no transpose"),
    Mistake(
        "kv-reuse-query-projection", C_("title", "Keys or values use the query projection"),
        C_("explanation", "Shapes are right and the model even trains, but the projection left out gets no gradient, and "
        "changing it changes nothing."),
        C_("hint", "Compute K with the key projection on the keys and V with the value projection on the values."),
        "the output equals the reference with W_K and/or W_V replaced by W_Q, and changing W_K/W_V "
        "leaves the output unchanged"),
    Mistake(
        "missing-output-projection", C_("title", "No output projection"),
        C_("explanation", "Without w_o the heads are never mixed: each output feature comes from a single head."),
        C_("hint", "Return `self.w_o(concat)`."),
        "the output equals the merged heads before w_o"),
    Mistake(
        "dropout-in-eval", C_("title", "Dropout is active in eval mode"),
        C_("explanation", "After model.eval() dropout must do nothing; your module still drops (or rescales) attention "
        "weights, so inference is random and wrong."),
        C_("hint", "Use an `nn.Dropout` module (it switches off in eval mode) or pass `training=self.training` to "
        "`F.dropout`."),
        "in eval mode the output with dropout=0.5 differs from the output with dropout=0"),
    Mistake(
        "input-modified", C_("title", "The input was changed in place"),
        C_("explanation", "The function modified an array it was given (for example `x -= x.max()` or `scores[~mask] = ...` "
        "on the caller's data). The caller's data is silently corrupted."),
        C_("hint", "Work on new arrays: `x = x - x.max(...)` instead of `x -= ...`, or copy first."),
        "an argument differs after the call from what was passed in"),
    Mistake(
        "wrong-shape", C_("title", "The output has the wrong shape"),
        C_("explanation", "The result's shape differs from the one the docstring asks for."),
        C_("hint", "Check the shapes in the docstring; print `.shape` after each step."),
        "the shape differs from the reference's and matches no other catalogued mistake"),
    # --- the course's additions ---------------------------------------------------------------
    Mistake(
        "wrong-signature", C_("title", "The function does not accept the documented arguments"),
        C_("explanation", "Calling it the way the docstring says raised a TypeError about its arguments."),
        C_("hint", "Keep the signature of the stub exactly (names, order and defaults of the arguments)."),
        "the call raises TypeError naming an argument"),
    Mistake(
        "wrong-type", C_("title", "The result is not of the expected type"),
        C_("explanation", "The function returned something other than what the docstring asks for (for example a list "
        "instead of an array, or a tuple where one array is expected)."),
        C_("hint", "Return exactly the type the docstring names."),
        "the returned value is not an array/tensor/dict/set as required"),
    Mistake(
        "time-limit", C_("title", "Too slow, or never finishes"),
        C_("explanation", "The code did not finish within the time limit (default 10 s per exercise); usually an endless "
        "loop or a Python loop over a large array."),
        C_("hint", "Look for loops that never end; use vectorised NumPy/PyTorch operations."),
        "the worker process is still running at the deadline"),
    Mistake(
        "memory-limit", C_("title", "Too much memory"),
        C_("explanation", "The code asked for more memory than the limit (default 2 GiB)."),
        C_("hint", "Look for arrays much larger than the inputs (an accidental outer product or broadcast)."),
        "the worker process hit its memory limit"),
    Mistake(
        "process-exit", C_("title", "The code ended the process"),
        C_("explanation", "The code called sys.exit/os._exit, raised SystemExit or KeyboardInterrupt, or crashed the "
        "interpreter, so the exercise could not be checked."),
        C_("hint", "Remove exit() calls and anything that stops the process."),
        "the worker process stopped or SystemExit/KeyboardInterrupt was raised"),
    Mistake(
        "test-misses-bug", C_("title", "Your test does not catch the bug"),
        C_("explanation", "The test returned normally for a class whose keys and/or values use the query projection: it "
        "does not check anything that the bug changes (checking only shapes is not enough)."),
        C_("hint", "Compare outputs with nn.MultiheadAttention after copying weights, or check that k_project and "
        "v_project receive gradients / that changing their weights changes the output."),
        "the student's test_projections returns normally for a buggy class"),
    Mistake(
        "test-rejects-correct", C_("title", "Your test fails a correct class"),
        C_("explanation", "The test raised for a correct implementation, so it cannot tell right from wrong."),
        C_("hint", "Make sure your test passes on FixedMultiHeadAttention (and on any other correct implementation), "
        "with tolerances like atol=1e-5 for float32."),
        "the student's test_projections raises for a correct class"),
    Mistake(
        "mask-misbroadcast", C_("title", "The mask's batch axis lands on the head axis"),
        C_("explanation", "Broadcasting lines shapes up from the right, so a mask without a head axis, such as lesson 2's "
        "(B, 1, Lk) padding mask, meets scores of shape (B, h, Lq, Lk) as (1, B, 1, Lk): head i of every "
        "sequence uses the padding of sequence i. When B differs from h this raises a shape error; when "
        "B == h nothing complains and the output is silently wrong. Dropping the size-1 head axis of a "
        "(B, 1, 1, Lk) mask, or folding the heads into the batch and expanding the mask with "
        "`.repeat(h, 1, 1)` instead of `.repeat_interleave(h, dim=0)`, does the same."),
        C_("hint", "Give the mask its head axis before it meets the scores: `mask[:, None]` turns (B, 1, Lk) into "
        "(B, 1, 1, Lk). Keep the head axis of a mask you are given; print `mask.shape` next to "
        "`scores.shape` and check that every axis is either equal or 1 in the right place."),
        "with as many sequences as heads, the output equals attention in which head i reads the mask of "
        "sequence i instead of its own sequence's mask"),
    # --- issue 12: mistakes seen in published code (helper C) -----------------------------------
    Mistake(
        "softmax-ignores-axis", C_("title", "Softmax ignores its axis argument"),
        C_("explanation", "The function always normalises over the last axis (or over the whole array), whatever `axis` "
        "it is given. With the default axis=-1 it looks right; softmax(x, axis=0) is not."),
        C_("hint", "Use the argument everywhere: `x.max(axis=axis, keepdims=True)` and "
        "`e.sum(axis=axis, keepdims=True)`, never a hard-coded -1 and never a sum over the whole array."),
        "softmax(x, axis=a) equals the softmax over the last axis (or over every element) while the "
        "default axis is right"),
    Mistake(
        "softmax-global-max", C_("title", "Softmax subtracts the maximum of the whole array"),
        C_("explanation", "Subtracting one maximum for the whole array keeps the largest value finite, but every row whose "
        "values lie far below that maximum underflows: exp() gives 0 for each element, and 0/0 is NaN. "
        "The problem is underflow, not overflow."),
        C_("hint", "Subtract each row's own maximum: `x - x.max(axis=axis, keepdims=True)`."),
        "rows far below the global maximum give NaN, and the answer equals softmax with the global "
        "maximum subtracted"),
    Mistake(
        "kv-from-query-input", C_("title", "Keys and values come from the query input"),
        C_("explanation", "The keys and/or values are projected from the `query` argument instead of `key` and `value`. "
        "In self-attention the three inputs are the same tensor, so it goes unnoticed; in "
        "cross-attention (a decoder reading an encoder) the module never looks at the other sequence."),
        C_("hint", "Project each input with its own layer: `self.w_k(key)` and `self.w_v(value)`."),
        "with distinct query, key and value inputs the output equals attention whose keys/values are "
        "projected from the query input"),
    Mistake(
        "mask-int-invert", C_("title", "`~` on a 0/1 integer mask"),
        C_("explanation", "For integers `~` is the bitwise NOT: `~1 == -2` and `~0 == -1`, both non-zero, so a 0/1 mask "
        "inverted with `~` marks every pair as blocked (or, used as an index, picks the wrong elements). "
        "A boolean mask works, an integer one does not."),
        C_("hint", "Compare instead of inverting: `mask == 0` (or convert first: `~mask.astype(bool)`, "
        "`~mask.bool()`)."),
        "a 0/1 integer mask gives a different answer from the same mask as booleans, and the boolean "
        "one is right"),
    Mistake(
        "batched-transpose", C_("title", "`.T` on a batched array"),
        C_("explanation", "`.T` reverses EVERY axis, so on keys of shape (batch, L, d) it gives (d, L, batch), not "
        "(batch, d, L). On a single sequence it is right, which hides the bug until a batch arrives."),
        C_("hint", "Swap only the last two axes: `np.swapaxes(k, -1, -2)` (NumPy) or `k.transpose(-2, -1)` (PyTorch)."),
        "one sequence is right, but a batch raises the error (or gives the values) of `.T` used where "
        "the last two axes should be swapped"),
    Mistake(
        "weights-transposed", C_("title", "Projections use the transposed matrix"),
        C_("explanation", "The worked example writes projections as X W, with W of shape (d_model, d_k). `X @ W.T` "
        "(the convention of nn.Linear, which stores W transposed) multiplies by the wrong matrix; with "
        "square matrices it even has the right shape."),
        C_("hint", "Use `X @ W_Q1` as printed in the example; `.T` belongs to nn.Linear's stored weight only."),
        "Q, K or V equal X @ W.T"),
    Mistake(
        "dropout-on-output", C_("title", "Dropout on the output instead of the attention weights"),
        C_("explanation", "Dropout is applied to the module's output (or to the values or the merged heads) instead of to "
        "the attention weights. In eval mode nothing changes, but in training it drops features of the "
        "result rather than whole query-key links, which is not the attention dropout the contract asks for."),
        C_("hint", "Apply dropout to the weights right after the softmax: `weights = self.dropout(weights)`, then "
        "`weights @ v`."),
        "in training mode, with value and output projections set to the identity and constant values, "
        "correct dropout keeps each head's output columns equal within a row; dropping the output breaks that"),
    # --- issue 15: lessons 07 and 08 (helper A) -------------------------------------------------
    Mistake(
        "pe-sin-cos-swapped", C_("title", "Sine and cosine swapped in the positional encoding"),
        C_("explanation", "Each (sin, cos) pair still encodes the position, but not as the formula defines it (PE[p, 2i] = sin, "
        "PE[p, 2i+1] = cos), so it does not match models and code that use it."),
        C_("hint", "Fill `pe[:, 0::2]` with the sines and `pe[:, 1::2]` with the cosines."),
        "the output equals the encoding with sin and cos exchanged"),
    Mistake(
        "pe-wrong-frequency", C_("title", "Wrong frequencies in the positional encoding"),
        C_("explanation", "Feature pair i must use the angle p / 10000^(2i/d_model), where 2i is the index of the pair's "
        "even feature. Using the pair number i (or each feature's own index j, so the sine and cosine of a "
        "pair get different frequencies), or multiplying by 10000^(2i/d_model) instead of dividing, gives "
        "other frequencies."),
        C_("hint", "Compute the angles p / 10000^(2i / d_model) with 2i = 0, 2, 4, ... (`torch.arange(0, d_model, 2)`), and "
        "use the same angles for the sine (even features) and the cosine (odd features)."),
        "the output equals the encoding with exponent i/d_model, j/d_model, or -2i/d_model"),
    Mistake(
        "missing-residual", C_("title", "A sublayer replaces x instead of adding to it"),
        C_("explanation", "In a transformer block each sublayer's output is added to its input: `x = x + attn(norm1(x))` and "
        "`x = x + ff(norm2(x))`. Assigning `x = attn(...)` (or returning `ff(...)`) throws the input away: "
        "the block can no longer pass information through unchanged, and deep stacks stop training."),
        C_("hint", "Add, do not replace: `x = x + sublayer(norm(x))` for both sublayers."),
        "the output equals the block with one or both residual additions left out"),
    Mistake(
        "post-norm", C_("title", "LayerNorm after the residual addition (post-norm)"),
        C_("explanation", "The exercise asks for a pre-norm block, which normalises the input of each sublayer and leaves the "
        "residual stream alone. `x = norm1(x + attn(x))` is the post-norm arrangement of the original "
        "paper: a different function (and nn.TransformerEncoderLayer's norm_first=False)."),
        C_("hint", "Normalise before the sublayer: `x = x + attn(norm1(x))`, then `x = x + ff(norm2(x))`."),
        "the output equals the block computed with norm(x + sublayer(x))"),
    Mistake(
        "kv-repeat-order", C_("title", "Key/value heads tiled instead of repeated in a row"),
        C_("explanation", "In grouped-query attention query heads 0..n_rep-1 share key/value head 0, the next n_rep share head "
        "1, and so on; with the heads tiled, most query heads read another group's keys and values. "
        "With one key/value head (MQA) or none shared (MHA) both orders agree, which hides the bug."),
        C_("hint", "Use `torch.repeat_interleave(x, n_rep, dim=1)`, or `x[:, :, None].expand(B, h_kv, n_rep, T, d_k)"
        ".reshape(B, h_kv * n_rep, T, d_k)`."),
        "the output equals the heads repeated with Tensor.repeat (tiled)"),
    Mistake(
        "cache-causal-offset", C_("title", "The causal mask ignores the cached tokens"),
        C_("explanation", "With T_past tokens in the cache, new token i is at position T_past + i and may read keys "
        "0..T_past + i, so the mask of the new tokens is the causal one shifted by T_past. (`is_causal=True` "
        "builds it without the shift.)"),
        C_("hint", "Build the mask from absolute positions: `torch.ones(T, T_past + T, dtype=torch.bool).tril(T_past)`."),
        "with a cache, the output equals attention with the mask tril(0) of the rectangle, or with no mask"),
    Mistake(
        "cache-not-appended", C_("title", "The returned cache lacks the new keys and values"),
        C_("explanation", "forward must return the cache with the new tokens' keys and values appended along the time axis "
        "(T_past + T of them). Returning the cache that was passed in, only the new keys and values, or "
        "None means that the next call attends over the wrong tokens."),
        C_("hint", "After `k = torch.cat([cache_k, k], dim=2)` (and the same for v), return `(k, v)` with the "
        "output."),
        "the returned cache equals the old cache, only the new keys/values, or None; or outputs run in "
        "pieces equal those of a module whose cache is never extended"),
    # --- issue 23: the contract's additions after the walkthrough, and one of the course's ----------
    Mistake(
        "pe-concatenated", C_("title", "Sines and cosines in two halves instead of interleaved"),
        C_("explanation", "The encoding puts the d_model/2 sines in the first half of the features and the cosines in the "
        "second half (`torch.cat([sin, cos], dim=-1)`). Every value is there, but at the wrong feature: the "
        "formula interleaves them, PE[p, 2i] = sin and PE[p, 2i+1] = cos."),
        C_("hint", "Fill the even features (`0::2`) with the sines and the odd ones (`1::2`) with the cosines of the same "
        "angles, or stack each pair: `torch.stack([sin, cos], dim=-1).flatten(-2)`."),
        "the output equals the sines followed by the cosines"),
    Mistake(
        "cache-order-reversed", C_("title", "The cache is concatenated as [new, old]"),
        C_("explanation", "The new keys and values must come after the cached ones along the time axis: "
        "`torch.cat([cache_k, k], dim=2)`. Concatenating `[k, cache_k]` puts the newest tokens first, so "
        "the causal mask, which counts positions from the start, lets tokens read the wrong keys, and every "
        "later step inherits the scrambled cache."),
        C_("hint", "Put the cache first: `k = torch.cat([cache_k, k], dim=2)` and `v = torch.cat([cache_v, v], dim=2)`."),
        "run in pieces, the outputs (or the returned cache) equal those of a module that concatenates the "
        "new keys and values before the cached ones"),
    Mistake(
        "cache-stores-repeated", C_("title", "The cache holds the repeated key/value heads"),
        C_("explanation", "With grouped-query attention the cache must hold the num_kv_heads keys and values, "
        "(B, num_kv_heads, T, d_k): saving memory is the point of GQA. Repeating them to num_heads before "
        "caching gives the right outputs but a cache num_heads / num_kv_heads times larger, of the wrong "
        "shape for the next caller."),
        C_("hint", "Append the new keys and values to the cache and return it first, then repeat for the attention: "
        "`cache = (k, v)`, then `repeat_kv(k, n_rep)`, `repeat_kv(v, n_rep)`."),
        "the returned cache equals the expected one with every key/value head repeated n_rep times"),
    Mistake(
        "causal-mask-missing", C_("title", "No causal mask"),
        C_("explanation", "A decoder's self-attention must not let a token read the tokens after it. Without a causal mask every "
        "token reads the whole sequence, future included. Decoding one token at a time hides it (a single new "
        "token has no future to see); a prompt or a chunk of several tokens shows it."),
        C_("hint", "Block the future: `mask = torch.ones(T, T_past + T, dtype=torch.bool).tril(T_past)`, then "
        "`scores.masked_fill(~mask, float('-inf'))` before the softmax."),
        "the output equals attention without any mask"),
    Mistake(
        "kv-repeat-wrong-axis", C_("title", "Key/value heads repeated along the wrong axis"),
        C_("explanation", "repeat_kv must repeat along the head axis (dim 1 of (B, h_kv, T, d_k)). Repeating along the batch, "
        "time or feature axis gives a tensor of the wrong shape whose entries are the right ones in the "
        "wrong places: the query heads would meet duplicated tokens or features instead of their group's "
        "key/value head."),
        C_("hint", "Repeat along dim 1: `torch.repeat_interleave(x, n_rep, dim=1)`."),
        "the output equals x.repeat_interleave(n_rep, dim=d) with d the batch, time or feature axis"),
    # --- issue 25: lesson 09 -----------------------------------------------------------------------
    Mistake(
        "rope-interleaved", C_("title", "RoPE pairs neighbouring features (the GPT-J layout)"),
        C_("explanation", "This course's RoPE pairs feature i with feature i + d/2 (the rotate-half layout of GPT-NeoX and "
        "Llama). Pairing neighbours is the same idea on permuted features, but a model trained with one "
        "layout gives wrong scores when run with the other."),
        C_("hint", "Split the features in halves: `x1, x2 = x[..., :d // 2], x[..., d // 2:]`, and return "
        "`torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)`."),
        "the output equals RoPE with pairs (2i, 2i + 1)"),
    Mistake(
        "rope-wrong-frequency", C_("title", "RoPE angles with the wrong frequencies"),
        C_("explanation", "Pair i at position p must turn by p * base^(-2i/d). Using i/d, dividing arange(0, d, 2) by d/2 "
        "instead of d, or base^(+2i/d), gives other frequencies: positions are encoded, but not the way "
        "every RoPE model was trained."),
        C_("hint", "Compute the frequencies θ_i = `base ** (-2 * torch.arange(d // 2) / d)` (2i/d for pair i), then the "
        "`(T, d/2)` table of angles `positions[:, None] * θ[None, :]`."),
        "the output equals RoPE with exponent i/d, 4i/d or -2i/d"),
    Mistake(
        "rope-positions-ignored", C_("title", "RoPE ignores the positions it is given"),
        C_("explanation", "Without a cache, rotating the rows by 0, 1, ..., T-1 is the same thing, so training looks fine; "
        "with a KV cache every new token (T = 1) is rotated as position 0, so it sees the cached keys at the "
        "wrong distances and generation falls apart."),
        C_("hint", "Build the table of angles from the `positions` argument (`positions[:, None] * θ[None, :]`), not "
        "from `torch.arange(x.shape[-2])`."),
        "the output equals RoPE at positions 0..T-1 when other positions were given"),
    Mistake(
        "rope-sign-flipped", C_("title", "RoPE turns the other way"),
        C_("explanation", "The lesson's rotation is out_i = x_i cos - x_{i+d/2} sin and out_{i+d/2} = x_{i+d/2} cos + x_i sin. "
        "Turned by -p θ_i instead, scores still depend only on the distance between positions, but with the "
        "opposite sign, so the weights of a model trained with RoPE no longer fit."),
        C_("hint", "Return `torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)` with `x1, x2` the two halves "
        "of the features."),
        "the output equals RoPE at the positions negated"),
    Mistake(
        "temperature-after-softmax", C_("title", "Temperature applied to the probabilities"),
        C_("explanation", "The temperature must divide the logits before the softmax. Dividing the probabilities after it "
        "changes nothing once they are renormalised (or leaves them summing to 1/temperature), so the "
        "temperature has no effect on the choice."),
        C_("hint", "Divide first (`scaled = logits / temperature`), then apply top-k, then the softmax."),
        "the output equals the distribution computed at temperature 1 (or divided by the temperature)"),
    Mistake(
        "top-p-drops-threshold-token", C_("title", "Top-p drops the token that crosses top_p"),
        C_("explanation", "Top-p keeps the smallest set of most likely tokens whose total reaches top_p: a token is kept when "
        "the total of the tokens before it is below top_p. Without the crossing token the kept set sums to "
        "less than top_p, and it can be empty."),
        C_("hint", "With `p` the probabilities sorted in decreasing order, keep a token while the total before it is below "
        "top_p: `torch.cumsum(p, dim=-1) - p < top_p`, not `torch.cumsum(p, dim=-1) < top_p`."),
        "the output equals top-p with the crossing token removed"),
    Mistake(
        "not-renormalised", C_("title", "The kept probabilities do not sum to 1"),
        C_("explanation", "After top-k or top-p removes tokens, the remaining probabilities must be divided by their sum, so "
        "the distribution sums to 1 again. Left as they are, they sum to less than 1 (torch.multinomial "
        "still draws from them, but the function's answer is not a distribution)."),
        C_("hint", "End with `probs / probs.sum(dim=-1, keepdim=True)`."),
        "the output equals the distribution without the final division by its sum"),
    Mistake(
        "cache-not-used", C_("title", "Generation does not use the KV cache"),
        C_("explanation", "After the prompt, each step must give the model only the new token (B, 1) together with the cache "
        "the previous call returned. Feeding the whole sequence at every step without the cache gives a real "
        "model's tokens at O(T) tokens of work per step instead of one; the grader's test model depends on "
        "the cache each call is given, so it gives other tokens."),
        C_("hint", "Call `model(prompt, cache=None)` once and keep the cache it returns; then, in the loop, call "
        "`model(token, cache=cache)` with `token` of shape (B, 1) and keep the new cache."),
        "generate's tokens on a course model whose logits depend on the length of the cache each call is "
        "given are those of the whole sequence at every step without the cache"),
    Mistake(
        "cache-dropped", C_("title", "Each new token is fed without the cache"),
        C_("explanation", "The model then sees only that token and forgets the text before it: the cache is what carries the "
        "prompt and the tokens drawn so far from one call to the next."),
        C_("hint", "Keep the cache each call returns and give it back with the next token: `model(token, cache=cache)`."),
        "generate's tokens are those of a generation that calls the model with each new token and no cache"),
    Mistake(
        "prompt-fed-again", C_("title", "The whole sequence is fed again together with the cache"),
        C_("explanation", "After the prompt the model must be given only the new token (B, 1) with the cache: the cache already "
        "holds the text so far, so the model stores it a second time and counts positions on from the end of "
        "the cache, and each step sees the text twice at the wrong positions."),
        C_("hint", "In the loop give the model only the token just drawn, `next_token` of shape (B, 1): "
        "`logits, cache = model(next_token, cache=cache)`."),
        "generate's tokens are those of a generation that gives the model the whole sequence with the cache"),
    Mistake(
        "first-position-logits", C_("title", "The next token is drawn from the first position's logits"),
        C_("explanation", "The model returns logits for every position it was given, and the next token follows the last one; "
        "the first position's logits predict the prompt's second token, not the token after the prompt."),
        C_("hint", "Take the last position: `logits[:, -1]` (shape (B, V))."),
        "generate's tokens are those of a generation that reads the logits of the first position"),
    Mistake(
        "top-p-before-temperature", C_("title", "Top-p chosen before the temperature"),
        C_("explanation", "The temperature changes which tokens reach top_p, so the set must come from the softmax of the "
        "scaled logits: from the raw ones it holds too few tokens when the temperature is above 1 and too "
        "many below it."),
        C_("hint", "Divide first (`scaled = logits / temperature`), apply top-k, take the softmax of `scaled`, and "
        "only then choose the top-p set from those probabilities."),
        "the output equals top-p chosen at temperature 1, the kept tokens given the probabilities at the "
        "temperature"),
    Mistake(
        "top-k-ties-dropped", C_("title", "Top-k removes tokens that tie with the k-th largest"),
        C_("explanation", "The contract keeps every token whose logit is not below the k-th largest, so tokens tied with it "
        "all stay. Keeping exactly k tokens (torch.topk's k indices, or the first k after a sort) drops some of a "
        "tie, arbitrarily."),
        C_("hint", "Compare with the k-th largest value: `kth = torch.topk(logits, k).values[..., -1:]`, then remove "
        "`logits < kth`."),
        "the output equals top-k keeping exactly k tokens"),
    Mistake(
        "top-p-tie-order", C_("title", "Top-p orders equal probabilities higher index first"),
        C_("explanation", "When the top_p threshold falls inside a group of equally likely tokens, the contract keeps the "
        "lower indices first (a stable descending sort). Sorting ascending and reading from the end (as "
        "Hugging Face's top-p warper does) keeps the higher indices instead."),
        C_("hint", "Use `torch.sort(probs, dim=-1, descending=True, stable=True)`."),
        "the output equals top-p with ties ordered by decreasing index"),
    Mistake(
        "generate-train-mode", C_("title", "generate runs the model in training mode"),
        C_("explanation", "Generation must run the model in eval mode: in training mode dropout (and anything else that "
        "depends on the mode) changes the logits, so the text depends on chance it should not."),
        C_("hint", "Call `model.eval()` before the loop, and restore the flag afterwards (see train-flag-not-restored)."),
        "generate's tokens are those of the course model in training mode, where its logits are perturbed"),
    Mistake(
        "generate-grad-enabled", C_("title", "generate builds the autograd graph"),
        C_("explanation", "Without torch.no_grad() every step records the operations for a backward pass that never comes: "
        "memory grows with every token and each step is slower."),
        C_("hint", "Run the loop inside `with torch.no_grad():` (or decorate generate with `@torch.no_grad()`)."),
        "generate's tokens are those of a course model whose logits change when gradients are enabled, "
        "run with gradients enabled"),
    Mistake(
        "train-flag-not-restored", C_("title", "generate leaves the model in another mode"),
        C_("explanation", "generate must leave the model's training flag as it found it: a training loop that calls generate "
        "to print a sample would otherwise go on training in eval mode (dropout off), or an evaluation "
        "would find dropout switched on."),
        C_("hint", "Note `model.training` before switching to eval mode, and hand the same value back to `model.train(...)` "
        "at the end (in a `finally:` block, so an exception does not skip it)."),
        "the course model, called after generate returns, answers as a model in the other mode"),
    # lesson 10: FlashAttention (NumPy)
    Mistake(
        "running-sum-not-rescaled", C_("title", "The running sum is not rescaled when the maximum rises"),
        C_("explanation", "The running sum l holds exp(score - m) for the keys seen so far, relative to the running maximum m. "
        "When a block raises the maximum, the old terms must be brought to the new one: multiplied by "
        "exp(m_old - m_new). Without it the old terms keep their larger scale, the sum is too large, and "
        "the output (acc / l) too small."),
        C_("hint", "Before adding a block, rescale: `alpha = np.exp(m - m_new)`, then `l = l * alpha + p.sum(axis=-1)` "
        "(and the same alpha for the running output), or merge each block with your `combine_attention`."),
        "the output equals the reference's tiles merged with the running sum never rescaled"),
    Mistake(
        "accumulator-not-rescaled", C_("title", "The running output is not rescaled when the maximum rises"),
        C_("explanation", "The running output acc holds sum(exp(score - m) * v) relative to the running maximum m. When a "
        "block raises the maximum, the old part must be multiplied by exp(m_old - m_new) like the sum; "
        "without it the keys of earlier blocks weigh too much."),
        C_("hint", "Rescale before adding: `acc = acc * alpha[..., None] + p @ v_block` with `alpha = np.exp(m - m_new)`, "
        "the same alpha as for the running sum."),
        "the output equals the reference's tiles merged with the running output never rescaled"),
    Mistake(
        "normalised-per-block", C_("title", "Each block is normalised on its own"),
        C_("explanation", "A softmax taken within each block of keys makes each block's weights sum to 1, so adding (or "
        "averaging) the blocks' outputs does not give attention over all the keys: a block of poor matches "
        "weighs as much as a block of good ones. The blocks must be weighted by their share of the whole "
        "denominator, exp(lse_block - lse)."),
        C_("hint", "Merge each block's (output, lse) into the running one with `combine_attention`, or keep the "
        "unnormalised running sum and output and divide once at the end."),
        "the output equals the sum or the mean of the reference's tile outputs"),
    Mistake(
        "lse-unstable", C_("title", "The log-sum-exp overflows or loses the empty set"),
        C_("explanation", "log(sum(exp(x))) computed as written overflows to inf once a score (or an lse) is above ~709, and "
        "gives -inf below ~-745. Taking the maximum out first fixes that, but an empty set (every score "
        "-inf) then computes -inf - (-inf) = NaN unless it is guarded."),
        C_("hint", "Use `np.logaddexp(lse1, lse2)` (or m + log(sum(exp(x - m))) with m the maximum), and replace an "
        "infinite maximum by 0 before subtracting it: `np.where(np.isfinite(m), m, 0.0)`."),
        "the lse is infinite where the reference is finite, or NaN where a row has no key"),
    Mistake(
        "causal-top-left", C_("title", "The causal mask is aligned at the first key"),
        C_("explanation", "With fewer queries than keys (decoding with a cache), the last query is the newest token and sees "
        "every key: query i may attend key j when j <= i + Lk - Lq. Comparing j <= i (np.tril's alignment) "
        "hides the last Lk - Lq keys from every query."),
        C_("hint", "Shift the diagonal: `allowed = key_positions <= query_positions[:, None] + (Lk - Lq)`, with the "
        "positions of the tile's keys and queries (`np.arange(j0, j1)` and `np.arange(i0, i1)`)."),
        "the output equals causal attention with the mask aligned at the first key"),
    Mistake(
        "last-block-dropped", C_("title", "The last, shorter block is dropped"),
        C_("explanation", "When a length is not a multiple of block_size, the last block is shorter, not absent. Looping "
        "`range(L // block_size)` times ignores the keys (or queries) after the last full block."),
        C_("hint", "Loop `for j0 in range(0, Lk, block_size)` and end the block at `min(j0 + block_size, Lk)` (slicing "
        "`k[..., j0:j0 + block_size, :]` stops at the end by itself); the same for the queries."),
        "the output equals the reference with the keys after the last full block removed, or with the "
        "queries after it left zero"),
    Mistake(
        "materialises-scores", C_("title", "The full (Lq, Lk) array is built"),
        C_("explanation", "The point of FlashAttention is that the (Lq, Lk) scores and weights never exist at once: only one "
        "tile of them does. An implementation that builds them (or any (Lq, Lk) float array) needs memory "
        "that grows with Lq * Lk, and fails under the grader's memory limit, which one such array exceeds."),
        C_("hint", "Compute the scores one block of keys at a time (`q_block @ np.swapaxes(k[..., j0:j1, :], -1, -2)`) "
        "and merge each block into the running result; never index or mask with a full (Lq, Lk) array."),
        "under a memory limit that one (Lq, Lk) float64 array exceeds, an allocation of that shape is "
        "refused (in the self-check: tracemalloc's peak is at least one such array)"),
    Mistake(
        "combine-linear-weights", C_("title", "Partial outputs weighted by their lse, not by exp(lse - lse_total)"),
        C_("explanation", "Each set's share of the union is its part of the softmax denominator: exp(lse_i) / (exp(lse1) + "
        "exp(lse2)) = exp(lse_i - lse). Weights proportional to lse itself are not shares at all, and "
        "exp(lse_i) without a shared maximum overflows (inf / inf = NaN) for large lse."),
        C_("hint", "Take the union's log-sum-exp first, with `np.logaddexp`, then weight each output by `np.exp(lse_i - "
        "lse)` (at most 1), guarding lse = -inf when both sets are empty."),
        "the output equals the partial outputs weighted by lse, or by exp(lse) with no maximum subtracted"),
]}


# Fix text in a lesson's own API, where the catalogue's general one speaks another lesson's:
# (mistake id, lesson prefix) -> (explanation or None, hint or None). diagnose/root_cause.py reads
# these alongside its own.
LESSON_FIX: dict[tuple[str, str], tuple[str | None, str | None]] = {
    ("mask-inverted", "07"): (
        C_("explanation", "The course's masks mark the pairs that MAY attend (True/1 = attend), while nn.MultiheadAttention's "
        "attn_mask marks the pairs that are BLOCKED. Passing the course's mask to it unconverted blocks "
        "exactly the pairs that may attend."),
        C_("hint", "Convert before the call: `attn_mask = ~mask.bool()` (for a (B, T, T) mask, expanded to "
        "(B * num_heads, T, T) with `.repeat_interleave(num_heads, dim=0)`), then "
        "`self.attn(h, h, h, attn_mask=attn_mask)`.")),
    ("mask-misbroadcast", "07"): (
        C_("explanation", "nn.MultiheadAttention takes a 3-D attn_mask of shape (B * num_heads, T, T), with the heads of each "
        "sequence next to each other (sequence-major). `.repeat(num_heads, 1, 1)` tiles the sequences "
        "instead (0 1 0 1 ...), so the heads of one sequence read another sequence's mask."),
        C_("hint", "Expand each sequence's mask to its heads in a row: `(~mask.bool()).expand(B, T, T)"
        ".repeat_interleave(self.attn.num_heads, dim=0)`.")),
    ("mask-int-invert", "07"): (
        None, C_("hint", "Convert to booleans before inverting: `attn_mask = ~mask.bool()` (or `mask == 0`).")),
    ("missing-scale", "08"): (
        None, C_("hint", "Divide the scores by `math.sqrt(self.d_k)` (d_k = d_model // num_heads, one head's size) before "
              "the softmax, or use `F.scaled_dot_product_attention`, which does.")),
    ("wrong-scale", "08"): (
        C_("explanation", "Each head compares vectors of size d_k = d_model // num_heads, so d_k is the size to scale by, not "
        "d_model."),
        C_("hint", "Divide by `math.sqrt(self.d_k)`, with d_k = d_model // num_heads: the last dimension of q after the "
        "heads are split.")),
    ("causal-off-by-one", "08"): (
        None, C_("hint", "New token i (at position T_past + i) may read keys 0..T_past + i, itself included: "
              "`torch.ones(T, T_past + T, dtype=torch.bool).tril(T_past)`.")),
    ("causal-transposed", "08"): (
        None, C_("hint", "Rows are the new tokens (queries), columns the keys: keep the lower triangle, "
              "`torch.ones(T, T_past + T, dtype=torch.bool).tril(T_past)`, not `triu`.")),
    ("heads-mixed", "05"): (
        None, C_("hint", "Split with `x.view(B, T, h, d_k).transpose(1, 2)` (`split_heads`), merge with "
              "`x.transpose(1, 2).reshape(B, T, h * d_k)` (`merge_heads`), and let MultiHeadAttention.forward "
              "call both.")),
    ("heads-mixed", "08"): (
        None, C_("hint", "Split with `.view(B, T, h, d_k).transpose(1, 2)` (and the keys/values with h_kv heads); merge "
              "with `.transpose(1, 2).reshape(B, T, h * d_k)`.")),
}


def describe(mistake_id: str) -> str:
    """One paragraph for a student: what the mistake is and how to fix it."""
    m = CATALOGUE[mistake_id]
    return f"This looks like '{m.id}' ({m.title.lower()}): {m.explanation} Fix: {m.hint}"
for _l in ("01", "02"):
    LESSON_FIX[("mask-inverted", _l)] = (None, C_("hint", "Block where the mask is False/0: `np.where(mask, scores, -np.inf)`."))
    LESSON_FIX[("batched-transpose", _l)] = (None, C_("hint", "Swap only the last two axes: `np.swapaxes(k, -1, -2)`."))
for _l in ("03", "05", "06"):
    LESSON_FIX[("mask-inverted", _l)] = (None, C_("hint", "Block where the mask is False/0: "
                                               "`scores.masked_fill(mask == 0, float('-inf'))`."))
    LESSON_FIX[("batched-transpose", _l)] = (None, C_("hint", "Swap only the last two axes: `k.transpose(-2, -1)`."))
LESSON_FIX[("masked-row-nan", "03")] = (
    None, C_("hint", "After the softmax, set the weights of rows with no allowed key to zero, e.g. "
          "`weights.masked_fill(~allowed.any(-1, keepdim=True), 0.0)` (and make sure no NaN reaches the output)."))
LESSON_FIX[("missing-scale", "03")] = (
    None, C_("hint", "Divide the scores by `math.sqrt(d_k)`, where d_k = q.shape[-1] is the size of the projected queries, "
          "before the softmax."))
# Lesson 10 in its own names: section 2's (m, ℓ, a), combine_attention's (out1, lse1, out2, lse2), the
# tiles' m and the guard `np.where(np.isfinite(...), ..., 0.0)` that naive_attention shows.
LESSON_FIX[("lse-unstable", "10")] = (
    C_("explanation", "exp() of an lse or a score above ~709 overflows to inf (and below ~-745 it is 0): a log-sum-exp, or a "
    "weight, computed with exp() before any maximum is taken out comes out inf or NaN. Subtracting the union's lse first keeps every exponent <= 0, but when both sets are empty that lse is "
    "-inf, and lse1 - lse computes -inf - (-inf) = NaN unless it is guarded."),
    C_("hint", "Take the union's lse with `np.logaddexp(lse1, lse2)`, guard it, `safe = np.where(np.isfinite(lse), lse, 0.0)`, and "
    "weight the outputs by `np.exp(lse1 - safe)` and `np.exp(lse2 - safe)` (in flash_attention, a tile's lse "
    "is `m + np.log(l)` with m the tile's maximum)."))
LESSON_FIX[("masked-row-nan", "10")] = (
    C_("explanation", "A row with no visible key, in the whole problem or only in one tile (on the diagonal, the first "
    "queries of a query block may see none of a key block's keys), has a maximum of -inf, and "
    "exp(s - m) computes exp(-inf - (-inf)) = NaN; the NaN then reaches the row's running result. The "
    "course asks for a zero output and lse = -inf where there is no key."),
    C_("hint", "Take the tile's maximum as naive_attention does, `m = np.where(np.isfinite(m), m, 0.0)` (in the "
    "(m, ℓ, a) form, the same guard on the new running maximum before subtracting it), and give a row "
    "with ℓ = 0 a zero output and lse = -inf."))
LESSON_FIX[("causal-off-by-one", "10")] = (
    C_("explanation", "Query i may attend key j when j <= i + Lk - Lq, the diagonal included. A key block is wholly in the "
    "future for the block of queries i0 to i1 - 1 only when its first key j0 is past the last query's last key: "
    "j0 > i1 - 1 + Lk - Lq. Stopping at j0 >= i1 - 1 + Lk - Lq drops a block whose first key the last "
    "query may still attend."),
    C_("hint", "Stop the loop over keys only when `j0 > i1 - 1 + Lk - Lq` (or loop over `range(0, min(Lk, i1 + Lk - "
    "Lq), block_size)`), and mask each tile with `np.arange(j0, j1) <= np.arange(i0, i1)[:, None] + (Lk - Lq)`."))
LESSON_FIX[("running-sum-not-rescaled", "10")] = (
    C_("explanation", "The running sum ℓ holds exp(score - m) for the keys seen so far, relative to the running maximum m. "
    "When a block raises the maximum, the old terms must be brought to the new one: multiplied by "
    "exp(m_old - m_new). Without it the old terms keep their larger scale, the sum is too large, and the "
    "output a / ℓ too small."),
    C_("hint", "Before adding a block, rescale: `alpha = np.exp(m - m_new)`, then `l = l * alpha + p.sum(axis=-1)` (and "
    "`a = a * alpha[..., None] + p @ v[..., j0:j1, :]`), or merge each block with your `combine_attention`."))
LESSON_FIX[("accumulator-not-rescaled", "10")] = (
    C_("explanation", "The running output a holds sum(exp(score - m) * v) relative to the running maximum m. When a block "
    "raises the maximum, the old part must be multiplied by exp(m_old - m_new) like the sum ℓ; without it "
    "the keys of earlier blocks weigh too much."),
    C_("hint", "Rescale before adding: `a = a * alpha[..., None] + p @ v[..., j0:j1, :]` with `alpha = np.exp(m - m_new)`, "
    "the same alpha as for the running sum."))
LESSON_FIX[("input-modified", "10")] = (
    C_("explanation", "The function changed an array it was given (for example `out1 *= w1` or `out1 += ...` in "
    "combine_attention): the caller's partial result is silently overwritten, and a reduction that merges "
    "the same partials again (flash decoding) reads the changed ones."),
    C_("hint", "Build new arrays: `out = w1 * out1 + w2 * out2`, never `out1 *= ...`; q, k, v, out1, lse1, out2 and "
    "lse2 are read, never written."))
