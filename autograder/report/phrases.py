"""The phrases the checks compose into what they saw, for the feedback's catalog.

A check says what it called and with what (`call=` of expect_array: "the weights from
scaled_dot_product_attention(q, k, v, mask) with a causal mask of shape (5, 5); q, k, v ..."), built
in each check from these pieces. They are marked here, once, rather than in every check's f-string:
i18n.localize finds a template inside the values of another ("{call}, compared with the reference:
{difference}") and an item of a list ("Lq=3, Lk=5, batch 2, cross-attention"), so each piece is
translated where it appears and the rest (code, shapes, numbers) stays as written. Nothing imports
this module; Babel extracts it (deliver/translations.py). A check that words a piece otherwise leaves
it in English: tests/test_feedback_translation.py fails when a piece's words are no longer written by
any string of the package (test_each_phrase_is_still_written_somewhere), and its corpus tests, and
`python -m autograder.classroom.english_left` over the whole corpus, say where English is left.
A sentence a check writes whole is marked where it is written (N_), not here.
"""
from autograder.i18n import N_

WHAT = [
    N_("the weights from {function} with {inputs}"),
    N_("the output of {function} with {inputs}"),
    N_("the lse from {function} with {inputs}"),
    N_("the weights from {call}"),
    N_("the output of {call}"),
    N_("the lse from {call}"),
    N_("the new tokens of {call}"),
    N_("the cached k returned by {call}"),
    N_("the cached v returned by {call}"),
    N_("the first item returned by {call}"),
    N_("With a mask that allows every key instead: {call}"),
    N_("{function} with {inputs}"),
    N_("{function} raised {exception}"),
    N_("{function} in training mode"),
    N_("{function} in eval mode"),
    N_("{function} run token by token"),
]

INPUTS = [
    N_("{variable} of shape {shape}"),
    N_("{variable} of shape {shape} {dtype}"),
    N_("{variable} of shape {shape} and no mask"),
    N_("{variable} of shape {shape} and a causal mask of shape {mask}"),
    N_("{variable} of shape {shape} and a {kind} mask of shape {mask} with one blocked row"),
    N_("{variable} of shape {shape} whose head i holds the number i"),
    N_("a causal mask of shape {shape}"),
    N_("a padding mask of shape {shape}"),
    N_("a {kind} mask of shape {shape} with a fully blocked row"),
    N_("a {kind} int mask of shape {shape}"),
    N_("a {shape} mask that blocks row {row} entirely"),
    N_("a mask that blocks two rows entirely"),
    N_("a causal mask and scores up to ~{value} ({dtype})"),
    N_("a causal & padding attn_mask with a blocked row"),
    N_("a prompt of shape {shape}"),
    N_("vocabulary {n}"),
    N_("batch {n}"),
    N_("no mask"),
    N_("cross-attention"),
    N_("cross-attention with one key"),
    N_("as many sequences as heads"),
    N_("the model in training mode"),
    N_("the model in eval mode"),
    N_("two random halves of the keys"),
    N_("{n} new token(s) after {cached} cached ones"),
    N_("{n} new tokens after {cached} cached ones"),
    N_("entries up to {value} ({dtype})"),
    N_("positions {range}"),
    N_("positions {range} (a cache of {n} tokens before them)"),
    N_("logits of shape {shape} = {values} (three tokens tie, and top_p falls among them)"),
    N_("logits of shape {shape} (the {n} most likely tokens hold less than top_p, {more} hold more)"),
    N_("logits of shape {shape} (integer logits, so some tie with the k-th)"),
    N_("logits of shape {shape} (top_p = {top_p} keeps every token)"),
    N_("lse from {low} to {high}"),
    N_("empty sets in some rows (lse = -inf)"),
    N_("its values"),
    N_("its entries"),
]

SAW = [
    N_("{function} run in chunks (chunk sizes {sizes}), its cache passed back, outputs concatenated"),
    N_("{function} run token by token (chunk sizes {sizes}), its cache passed back, outputs concatenated"),
    N_("{function} gives the same output in training and eval mode: dropout is not applied (apply nn.Dropout to the "
       "attention weights)"),
    N_("{function} gives the same output in training and eval mode: dropout is not applied (pass dropout to "
       "nn.MultiheadAttention and apply nn.Dropout to each sublayer's output before the residual addition)"),
    N_("{function} in training mode, with w_v and w_o set to the identity and every value vector all ones: the "
       "columns of one head differ within a row"),
    N_("{function} in training mode, with v_project and o_project the identity and x all ones: the columns of one "
       "head differ within a row"),
    N_("in training, single features of a head's output are zeroed, which dropout on the attention weights never does"),
    N_("test_projections returned normally for a class where {what} ({style}): it should raise AssertionError"),
    N_("keys and values use the query projection"),
    N_("only the keys use the query projection"),
    N_("only the values use the query projection"),
    N_("this one splits the heads with view and transpose"),
    N_("this one computes the heads with torch.einsum"),
    N_("this one computes one head at a time, in a Python loop"),
    N_("this one calls F.scaled_dot_product_attention"),
    N_("{function} did not raise: {why}, so it must raise {error}"),
    N_("{left} is not divisible by {right}"),
    N_("positional_encoding(4, 7) did not raise: features come in sine/cosine pairs, so an odd d_model must raise "
       "ValueError"),
    N_("changing {variable} did not change the output: the {letter} projection is not used"),
    N_("changing {variable} did not change the output: {module} is never used"),
    N_("changing {variable} does not change the output either: the output does not come from the projections at all"),
    N_("{function} gives the same output for two different inputs: it does not depend on the input"),
    N_("{function} gives the same output after the weights change: it does not use them"),
    N_("{call} returned shape {shape}, the new tokens without the prompt; expected {expected}"),
    N_("{exercise} raised an exception: {exception}"),
    N_("{function} with {inputs} raised {exception}"),
    N_("the code raised {exception}"),
    N_("{function} in eval mode differs from dropout=0.0"),
    N_("only the new tokens are returned, without the prompt before them"),
    N_("the module raises when it is called without a mask; mask=None must mean that every key may be read"),
    N_("with dropout=0.0 the training-mode output differs from the eval-mode output"),
    N_("only dropout may depend on the mode"),
    # clauses of a variant said alone (root_cause.summary keeps a clause another check did not say)
    N_("`.T` turns x of shape {shape} into {transposed}"),
    N_("it reverses every axis instead of the last two"),
    N_("the module has no {variable} at all"),
    N_("the merged heads are returned as they are"),
    N_("{module} is never used"),
    N_("it returns a tuple whose first item is the output"),
    # a check's lines joined into one (report/results.py, the one-line summaries)
    N_("test_projections fails a correct class ({style}): {verdict}"),
    # what the sandbox says of a worker that stopped (run/frames.py: EOFError)
    N_("the other side closed the connection"),
]
