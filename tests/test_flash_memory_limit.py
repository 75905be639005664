"""Lesson 10's memory check (issue 36): the graded call of flash_attention runs in a process of its own
whose address space its worker limits from outside (Zygote.limit_memory), so that one (Lq, Lk) float64
array cannot be allocated while tiles can. The reference passes; the reference run as one tile of the
whole (Lq, Lk) array (block_size >= Lk: the materialising fingerprint) is refused and named; an answer
that tries to raise its own limit, or that tells tracemalloc it allocated nothing, is refused all the
same: only what the kernel allowed decides. In a notebook's own kernel (the self-check) tracemalloc's
peak stands in, and the message says the grader's limit is what counts."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

from autograder.checks import test_10_flash_attention as checks
from autograder.classroom import accuracy
from autograder.classroom.runner import grade_many

L10 = "10_flash_attention"
MEMORY_TEST = "flash_attention runs within a memory limit that one (Lq, Lk) array exceeds"
FEW_QUERIES_TEST = "flash_attention's memory does not grow with Lk (few queries, many keys, causal and not)"



def _solution_source(grade_id: str = "flash_attention") -> str:
    from autograder.course import COURSE
    from autograder.load.reading import read_cells
    cells, _, _ = read_cells(COURSE[L10].solution_path)
    for cell in cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            source = "".join(cell["source"])
            return source.replace("    ### BEGIN SOLUTION\n", "").replace("    ### END SOLUTION\n", "")
    raise LookupError(f"no {grade_id} cell")


def _entry(name: str, source: str) -> accuracy.Entry:
    """The reference's combine_attention (which its flash_attention calls) and `source`."""
    return accuracy.Entry(name=name, lesson=L10, expect="wrong", wrong={"flash_attention": []},
                          cells={"combine_attention": _solution_source("combine_attention"), "flash_attention": source})


def _variants() -> dict[str, str]:
    ref = _solution_source()
    one_tile = ref.replace("def flash_attention(q, k, v, causal=False, block_size=64):",
                           "def flash_attention(q, k, v, causal=False, block_size=64):\n"
                           "    block_size = max(block_size, q.shape[-2], k.shape[-2])   # one tile: (Lq, Lk)")
    raises_limit = one_tile.replace("def flash_attention(q, k, v, causal=False, block_size=64):\n",
                                    "def flash_attention(q, k, v, causal=False, block_size=64):\n"
                                    "    import resource\n"
                                    "    for value in (resource.RLIM_INFINITY, 2 ** 40):\n"
                                    "        try:\n"
                                    "            resource.setrlimit(resource.RLIMIT_AS, (value, value))\n"
                                    "        except (ValueError, OSError):\n"
                                    "            pass\n")
    lies = one_tile.replace("def flash_attention(q, k, v, causal=False, block_size=64):\n",
                            "def flash_attention(q, k, v, causal=False, block_size=64):\n"
                            "    import tracemalloc\n"
                            "    tracemalloc.get_traced_memory = lambda: (0, 0)\n"
                            "    tracemalloc.stop()\n")
    # memory mapped before the limit and freed in the call: a reserve of address space made at import and
    # unmapped (it scored 2/2 when the limit counted from what the child mapped after the student's
    # definitions; so did an array made at import and dropped, the same room by another name)
    signature = "def flash_attention(q, k, v, causal=False, block_size=64):\n"
    reserve = one_tile.replace(signature, "import mmap as _mmap\n_RESERVE = [_mmap.mmap(-1, 1 << 30)]\n" + signature
                               + "    while _RESERVE:\n        _RESERVE.pop().close()\n")
    assert one_tile != ref and raises_limit != one_tile and lies != one_tile and reserve != one_tile
    return {"reference": ref, "one_tile": one_tile, "raises_limit": raises_limit, "lies_to_tracemalloc": lies,
            "reserve_freed_in_the_call": reserve, "scores_in_place": SCORES_IN_PLACE,
            "libraries_unmapped": UNMAP_LIBRARIES + SCORES_IN_PLACE.replace(
                signature, signature + "    if not _FREED:\n        _FREED.append(_unmap())\n")}


# All the scores at once, as one (Lq, Lk) array worked on in place: one (143, ~51,200) array of 56 MiB in
# the few-queries check. It scored there: glibc, when mmap is refused, retries in another arena, whose
# heap (64 MiB reserved, inherited from the worker's threads) grows by mprotect, which RLIMIT_AS does
# not count; the worker runs with MALLOC_ARENA_MAX=1 (isolate/bwrap.py).
# ... and the same after unmapping ~35 MiB of the worker's libraries it does not use (OpenBLAS: einsum
# needs none), found with dl_iterate_phdr: address space, never data (RLIMIT_DATA), is given back.
UNMAP_LIBRARIES = """import ctypes as _ct
_FREED = []
def _unmap(names=(b"openblas", b"libcrypto", b"ft2font", b"libjpeg", b"libzstd", b"unicodedata")):
    class Phdr(_ct.Structure):
        _fields_ = [("p_type", _ct.c_uint32), ("p_flags", _ct.c_uint32), ("p_offset", _ct.c_uint64),
                    ("p_vaddr", _ct.c_uint64), ("p_paddr", _ct.c_uint64), ("p_filesz", _ct.c_uint64),
                    ("p_memsz", _ct.c_uint64), ("p_align", _ct.c_uint64)]
    class Info(_ct.Structure):
        _fields_ = [("addr", _ct.c_uint64), ("name", _ct.c_char_p), ("phdr", _ct.POINTER(Phdr)),
                    ("phnum", _ct.c_uint16)]
    found = []
    def seen(info, size, data):
        i = info.contents
        if any(n in (i.name or b"") for n in names):
            for p in (i.phdr[j] for j in range(i.phnum)):
                if p.p_type == 1:
                    start = (i.addr + p.p_vaddr) & ~4095
                    found.append((start, ((i.addr + p.p_vaddr + p.p_memsz + 4095) & ~4095) - start))
        return 0
    libc = _ct.CDLL(None)
    libc.dl_iterate_phdr(_ct.CFUNCTYPE(_ct.c_int, _ct.POINTER(Info), _ct.c_size_t, _ct.c_void_p)(seen), None)
    libc.munmap.argtypes = [_ct.c_void_p, _ct.c_size_t]
    return sum(size for start, size in found if libc.munmap(start, size) == 0)
"""
SCORES_IN_PLACE = """def flash_attention(q, k, v, causal=False, block_size=64):
    Lq, Lk = q.shape[-2], k.shape[-2]
    s = np.einsum("...qd,...kd->...qk", q, k)
    s *= 1.0 / math.sqrt(q.shape[-1])
    if causal:
        for i in range(Lq):
            s[..., i, i + 1 + Lk - Lq:] = -np.inf
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    s -= m
    np.exp(s, out=s)
    l = s.sum(axis=-1)
    seen = l > 0
    out = np.where(seen[..., None], np.einsum("...qk,...kd->...qd", s, v) / np.where(seen, l, 1.0)[..., None], 0.0)
    with np.errstate(divide="ignore"):
        return out, np.where(seen, m[..., 0] + np.log(np.where(seen, l, 1.0)), -np.inf)
"""


@pytest.fixture(scope="module")
def results():
    entries = [_entry(name, source) for name, source in _variants().items()]
    with tempfile.TemporaryDirectory(prefix="flash-memory-") as tmp:
        students = accuracy.build_class(entries, Path(tmp))
        return grade_many(students, jobs=1, show=lambda *_: None)


@pytest.fixture(scope="module")
def graded(results):
    return {name: next(t for t in r["tests"] if t["name"].endswith(MEMORY_TEST)) for name, r in results.items()}


@pytest.mark.slow
def test_tiles_pass_under_the_limit(graded):
    assert graded["reference"]["status"] == "passed", graded["reference"]["output"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["one_tile", "raises_limit", "lies_to_tracemalloc", "scores_in_place"])
def test_one_full_array_is_refused_and_named(graded, name):
    test = graded[name]
    assert test["score"] == 0 and "mistake:materialises-scores" in test["tags"], test["output"]
    assert "ran out of memory under a limit of 40.0 MiB" in test["output"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["reserve_freed_in_the_call"])
def test_memory_the_definitions_keep_is_no_room_for_the_call(results, name):
    """The limit counts from what the child mapped before any code of the student's ran (plus 4 MiB for
    the definitions): the 1 GiB the definitions keep, to free in the call, leaves the call no room, and
    it is not made; both memory checks fail and say why (they scored 2/2 before)."""
    tests = [t for t in results[name]["tests"] if t["name"].endswith((MEMORY_TEST, FEW_QUERIES_TEST))]
    assert len(tests) == 2 and all(t["score"] == 0 for t in tests), [t["output"] for t in tests]
    assert all("not called: the notebook's definitions keep 1024.0 MiB mapped" in t["output"] for t in tests)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scores_in_place", "libraries_unmapped"])
def test_neither_a_glibc_arena_nor_unmapped_libraries_are_room_for_the_call(results, name):
    """All the scores at once, in place (one (143, Lk) array of 56 MiB), in the few-queries check: refused
    and named, as the check means (it scored: see SCORES_IN_PLACE, UNMAP_LIBRARIES)."""
    test = next(t for t in results[name]["tests"] if t["name"].endswith(FEW_QUERIES_TEST))
    assert test["score"] == 0 and "mistake:materialises-scores" in test["tags"], test["output"]
    assert "ran out of memory under a limit of 40.0 MiB" in test["output"]


def test_the_limit_sits_between_tiles_and_the_full_array():
    """One (Lq, Lk) float64 array of the check's inputs exceeds the limit by far; a tile of (Lq, block)
    is more than 30 times smaller than that array."""
    q, k, _ = checks.memory_inputs(np.random.default_rng(0))
    lq, lk = q.shape[-2], k.shape[-2]
    full, tile = lq * lk * 8, lq * 64 * 8
    assert full > 2 * checks.MEMORY_LIMIT
    assert full / tile >= 30
    assert 5 * tile < checks.MEMORY_LIMIT


def test_the_references_tiles_need_a_small_fraction_of_the_limit():
    """What the reference allocates at its peak on the check's inputs (tracemalloc, as the self-check
    measures it) is over 30 times below the limit, and the limit under half of one (Lq, Lk) array."""
    import math
    import tracemalloc
    namespace = {"np": np, "math": math}
    exec(_solution_source("combine_attention"), namespace)
    exec(_solution_source(), namespace)
    q, k, v = checks.memory_inputs(np.random.default_rng(1))
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        namespace["flash_attention"](q, k, v)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    full = q.shape[-2] * k.shape[-2] * 8
    assert 30 * peak < checks.MEMORY_LIMIT < full / 2, (peak, checks.MEMORY_LIMIT, full)


def test_self_check_measures_with_tracemalloc_and_says_so():
    """In a notebook's kernel the memory check fails an answer whose tracemalloc peak is above the limit,
    names materialises-scores when the peak is at least one (Lq, Lk) array, and says the grader's limit decides."""
    from autograder.grading.plugin import GradingPlugin, run_checks
    from autograder.grading.student import LocalSubmission
    namespace = {"np": np, "math": __import__("math")}
    exec(_solution_source("combine_attention"), namespace)
    exec(_variants()["one_tile"], namespace)
    plugin = GradingPlugin({L10: LocalSubmission(namespace)}, exercises={L10: {"flash_attention"}}, secret=None)
    with np.errstate(all="ignore"):
        run_checks(plugin, [L10])
    test = next(t for t in plugin.results if t["name"].endswith(MEMORY_TEST))
    assert test["score"] == 0 and "mistake:materialises-scores" in test["tags"]
    assert "tracemalloc" in test["output"] and "The grader enforces the limit" in test["output"]
    # the few-queries memory check (one (128, Lk) array over the limit) fails it too, by its peak
    narrow = next(t for t in plugin.results if t["name"].endswith(FEW_QUERIES_TEST))
    assert narrow["score"] == 0 and "tracemalloc" in narrow["output"]
    others = [t for t in plugin.results if not t["name"].endswith((MEMORY_TEST, FEW_QUERIES_TEST))]
    assert others and all(t["status"] == "passed" for t in others)   # its values are right everywhere
