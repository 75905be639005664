"""Isolate (grader side): what answering one question of a stand-in may cost the grader.

A stand-in's question (run/substitute.py, Asks) carries arguments the student's process chose, and the
grader computes the reference's answer to them (grading/independence.py). The arguments are bounded
by the wire (64 MB), but not what the reference builds from them: causal_mask(100_000) is a 10 GB
array, repeat_kv(x, 10_000) or combine_attention's broadcasting as large. So each answer is computed
under an address-space limit of the grader's own process, a little above what it maps already; an
allocation past it fails there (MemoryError, or torch's RuntimeError, which the answerer already
reads as arguments the reference refuses) and the student's own answer stands. The limit is the
process's, so this holds only where nothing else of the grader's runs meanwhile: a job grades one
student at a time, on one thread (classroom/runner.py).
"""
from __future__ import annotations

import contextlib
import resource

ANSWER_MEMORY = 256 * 2**20     # bytes one answer may map: its frame is at most 64 MB (run/wire.py)


def _mapped() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


@contextlib.contextmanager
def address_space_within(extra: int):
    """While inside, this process may map at most `extra` bytes more than it does now (RLIMIT_AS, soft
    limit only: it is put back on leaving). A lower limit already in force stays."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _mapped() + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def bounded(on_ask, extra: int = ANSWER_MEMORY):
    """`on_ask` (question -> answer) computing each answer within `extra` bytes more of address space;
    an answer that needs more is {} (the student's answer stands)."""
    if on_ask is None:
        return None

    def answer(question):
        try:
            with address_space_within(extra):
                return on_ask(question)
        except MemoryError:
            return {}
    return answer
