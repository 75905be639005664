"""Known-buggy variants of the reference computations: the fingerprints of catalogued mistakes.

Each function here is attention written once with switches, one switch per way students get
it wrong. A check computes what a mistake WOULD return on its inputs (for example
`np_attention(q, k, v, scale="none")` for missing-scale) and compares the student's answer
with it. The correct setting of every switch is the default, and tests/ prove the defaults
agree with the reference, so a mutant differs from the reference by its one bug only.

The student kit never carries this package: deliver/kit/assemble.py replaces it by the answers
recorded at release.

attention.py   lessons 01-06: np_attention, torch_attention, torch_mha, causal, padding, ...
decoder.py     lessons 07-08: positional, torch_block, repeat_heads, causal_step, causal_chunks
generation.py  lesson 09: rope, sample_probs, decode_tokens
"""
from autograder.diagnose.fingerprints.attention import *  # noqa: F401,F403
from autograder.diagnose.fingerprints.modules import *  # noqa: F401,F403
from autograder.diagnose.fingerprints.decoder import *  # noqa: F401,F403
from autograder.diagnose.fingerprints.generation import *  # noqa: F401,F403
