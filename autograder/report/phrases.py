"""The phrases the checks compose into what they saw, for the feedback's catalog.

A check says what it called and with what (`call=` of expect_array: "the weights from
scaled_dot_product_attention(q, k, v, mask) with a causal mask of shape (5, 5); q, k, v ..."), built
in each check from these pieces. They are marked here, once, rather than in every check's f-string:
i18n.localize finds a template inside the values of another ("{call}, compared with the reference:
{difference}") and an item of a list ("Lq=3, Lk=5, batch 2, cross-attention"), so each piece is
translated where it appears and the rest (code, shapes, numbers) stays as written. Nothing imports
this module; Babel extracts it (deliver/translations.py). A check that words a piece otherwise leaves
it in English, and tests/test_feedback_translation.py's corpus test says where.
"""
from autograder.i18n import N_

WHAT = [
    N_("the weights from {call}"),
    N_("the output of {call}"),
    N_("the lse from {call}"),
    N_("the new tokens of {call}"),
    N_("the cached k returned by {call}"),
    N_("the cached v returned by {call}"),
    N_("the first item returned by {call}"),
    N_("With a mask that allows every key instead: {call}"),
    N_("{call} with {inputs}"),
    N_("{call} raised {exception}"),
    N_("{call} in training mode"),
    N_("{call} in eval mode"),
    N_("{call} run token by token"),
]

INPUTS = [
    N_("{name} of shape {shape}"),
    N_("{name} of shape {shape} and no mask"),
    N_("{name} of shape {shape} and a causal mask of shape {mask}"),
    N_("{name} of shape {shape} and a {kind} mask of shape {mask} with one blocked row"),
    N_("{name} of shape {shape} whose head i holds the number i"),
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
]
