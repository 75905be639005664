"""How much of what a submission says the grader keeps.

The student's process is untrusted: whatever the sandboxed code does (an exception class named with
3 MB, a patched executor, a reply forged on the socket), it may send any text the wire format allows.
Every text that can reach a report is cut here, where it enters the grader, and the report writers cut
again (report/results.py), so one submission's results.json, feedback and terminal lines stay small.
"""
from __future__ import annotations

TYPE_NAME = 120          # an exception's or an object's type name (Python's own are under 40)
MESSAGE = 1000           # an exception's message (the child already sends at most ~600)
TRACEBACK = 3000         # the lines of the student's cells in a traceback (6 frames)
TEXT = 64 * 1024         # any one string in a reply (a signature, a returned str): never a bulk answer
CHECK_OUTPUT = 6000      # what one check says about a submission


def clip(text, limit: int) -> str:
    """`text` as a string of at most `limit` characters, saying how much was cut (so a text cut
    once is left as it is by the same cut)."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= limit:
        return text
    suffix = f" ... [cut: {len(text)} characters in all]"
    keep = max(limit - len(suffix), 0)
    return (text[:keep] + suffix)[:limit]
