"""Known-buggy variants, as changes around the reference: the fingerprints of catalogued mistakes.

A check computes what a mistake WOULD return on its inputs and compares the student's answer with
it. Each function here takes the reference function or class the check passes in (`reference.<name>`,
loaded by grading/reference.py from the solutions; diagnose sits below grading and never loads it)
and runs it with one change per switch: its inputs (q scaled, ~mask, the keys k.T), its parameters
(w_k := w_q), its submodules (w_o := identity), the helpers it calls (its softmax, torch.softmax,
repeat_kv, next_token_probs) or its outputs (columns permuted, blocked rows NaN). With no switch on,
a fingerprint is the reference's own answer. None computes attention itself; the few explicit
steps a mistake needs (the mistaken reshape of heads-mixed, the -1e9 fill) are the mistake's own
content, and each docstring says what changes. surgery.py holds the means (with_globals, Proxy).

The student kit never carries this package: deliver/kit/assemble.py replaces it by the answers
recorded at release.

attention.py   lessons 01, 02, 04 (NumPy): np_softmax, np_attention, causal, padding, worked_example
modules.py     lessons 03, 05, 06: torch_head, torch_mha, torch_fixed, split_heads, merge_heads
decoder.py     lessons 07-08: positional, torch_block, repeat_heads, causal_step, causal_chunks
generation.py  lesson 09: rope, sample_probs, decode_tokens, decode_logits, model_logits
flash.py       lesson 10: combine, flash
"""
from autograder.diagnose.fingerprints.attention import (causal, np_attention, np_softmax, padding,  # noqa: F401
                                                        worked_example)
from autograder.diagnose.fingerprints.decoder import (causal_chunks, causal_step, positional,  # noqa: F401
                                                      repeat_heads, torch_block)
from autograder.diagnose.fingerprints.generation import (decode_logits, decode_tokens, model_logits, rope,  # noqa: F401
                                                         sample_probs)
from autograder.diagnose.fingerprints.modules import (merge_heads, split_heads, torch_fixed, torch_head,  # noqa: F401
                                                      torch_mha)
from autograder.diagnose.fingerprints.flash import combine, flash  # noqa: F401
from autograder.diagnose.fingerprints.flash import nan_rows as flash_nan_rows, skip_losses as flash_skip_losses  # noqa: F401
