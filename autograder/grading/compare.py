"""Compare and diagnose: is the student's answer the reference's, and if not, which mistakes are in it?

`expect_array` is what a check calls. When the answer differs, it tries the fingerprints it
was given, most specific first:
  * `mutants`: a `Fingerprints` (a mutant function with switches and the catalogued variants
    it reproduces, tried alone and then in combinations, so two or three mistakes in one
    answer are each named), or old-style [(mistake id, make)] / {id: make};
  * `blocked`: the query rows whose keys are all blocked. Those rows are judged on their own
    (NaN, or not the reference's value) and the fingerprints are compared on the other rows,
    so a blocked-row mistake never hides, or is hidden by, anything else;
  * `signs`: predicates on the answer, for mistakes whose output is not one fixed array.
When nothing matches, the message says plainly what is wrong (shape, NaN, max error and
where) without guessing. A Mismatch carries every mistake found with the exact variant
(`found`: [(id, detail)]); diagnosis.py turns the failures of one exercise into one summary.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np

from autograder.grading import tolerances
from autograder.diagnose.mistakes import describe
from autograder.grading.differences import describe_value, fmt, summary
from autograder.i18n import N_


class Mismatch(AssertionError):
    """A check failed. `found` lists the catalogued mistakes recognised, each with the exact
    variant in words (or None); `mistake` is the first id (None when nothing was recognised)."""

    def __init__(self, message: str, mistake: str | None = None, *,
                 found: list[tuple[str, str | None]] | None = None, extra: list[str] | None = None):
        # extra: deviations the catalogue has no id for, in words (also in `message`, as "Also, ...")
        self.extra = list(dict.fromkeys(extra or []))
        found = list(found if found is not None else ([(mistake, None)] if mistake else []))
        merged: dict[str, list[str]] = {}
        for m, detail in found:   # one entry per id; its variants' details joined
            details = merged.setdefault(m, [])
            if detail and detail not in details:
                details.append(detail)
        unique = [(m, "; ".join(d) or None) for m, d in merged.items()]
        self.line, self.found = message, unique
        self.mistakes = [m for m, _ in unique]
        self.mistake = self.mistakes[0] if unique else None
        text = message
        for m, detail in unique:
            text += f"\n{describe(m)}" + (f" Here: {detail}." if detail else "")
        super().__init__(text)


@dataclass(frozen=True)
class Variant:
    """One way of getting it wrong: a catalogue id, the variant in words, the mutant's switches.
    mistake None: a deviation the catalogue has no id for (published code: ReLU after the
    projections, a residual and LayerNorm inside the module). It is never named; it lets the
    catalogued mistakes beside it be named, and an answer it explains never passes a check."""
    mistake: str | None
    detail: str | None
    switches: tuple            # ((name, value), ...): keyword arguments of the mutant function

    @staticmethod
    def of(mistake: str | None, detail: str | None = None, **switches) -> "Variant":
        return Variant(mistake, detail, tuple(sorted(switches.items())))


# switches that are alternative treatments of blocked scores (after the softmax, a -1e9 fill, NaN
# rows): a combination holds at most one of them
_ALTERNATIVES = frozenset({"mask_mode", "fill", "blocked_rows"})


class Fingerprints:
    """`run(**switches)` computes what the answer would be with those mistakes; `variants` are
    the catalogued ones it can reproduce. Candidates: each variant alone, then every pair and
    (depth 3) triple of variants whose switches do not overlap. A combination that reproduced an
    earlier answer is tried first (a student's mistakes are the same in every check)."""

    recent: list[tuple] = []          # switch sets that matched lately (this process)

    def __init__(self, run: Callable[..., object], variants: list[Variant], depth: int = 3,
                 given: Callable[[], list[Variant]] | None = None):
        """given: a thunk, called only when the answer differs, giving variants already known to be
        present (a module without an output projection at all): every candidate includes them, on
        top of up to `depth` others."""
        self.run, self.variants, self.depth = run, [v for v in variants if v is not None], depth
        self._given = given

    def combinations(self):
        given = list(self._given() or []) if self._given is not None else []
        taken = {k for v in given for k, _ in v.switches}
        vs = [v for v in self.variants if not taken & {k for k, _ in v.switches}]
        if given:
            return [tuple(given)] + [tuple(given) + c for c in self._combos(vs)]
        return self._combos(vs)

    def _combos(self, vs):
        from itertools import combinations
        out = [(v,) for v in vs]
        for n in range(2, self.depth + 1):
            for combo in combinations(vs, n):
                keys = [k for v in combo for k, _ in v.switches]
                if len(keys) == len(set(keys)) and len(set(keys) & _ALTERNATIVES) <= 1:
                    out.append(combo)
        known = {c: i for i, c in enumerate(Fingerprints.recent)}
        # simplest explanation first (a larger combination may reproduce the same answer when one of
        # its switches changes nothing here); among equals, what matched lately
        return sorted(out, key=lambda c: (len(c), known.get(tuple(sorted(k for v in c for k in v.switches)), 1e9)))

    def candidates(self):
        """(found, make) pairs, simplest explanation first."""
        for combo in self.combinations():
            switches = dict(kv for v in combo for kv in v.switches)
            key = tuple(sorted(switches.items()))
            yield [(v.mistake, v.detail) for v in combo], key, (lambda s=switches: self.run(**s))

    @staticmethod
    def remember(key):
        if key in Fingerprints.recent:
            Fingerprints.recent.remove(key)
        Fingerprints.recent.insert(0, key)
        del Fingerprints.recent[8:]


def _candidates(mutants):
    if isinstance(mutants, Fingerprints):
        yield from mutants.candidates()
        return
    items = list(mutants.items()) if isinstance(mutants, dict) else list(mutants or [])
    for mistake, make, *detail in items:     # (mistake, make) or (mistake, make, what the code does)
        yield [(mistake, detail[0] if detail else None)], None, make


def loaded_torch():
    """torch if this process has imported it, else None: a value can be a tensor only then, so a
    NumPy lesson is graded without importing torch (1 to 3 s)."""
    return sys.modules.get("torch")


def as_numpy(x):
    torch = loaded_torch()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return x


def _close(a, b, rtol, atol) -> bool:
    a, b = as_numpy(a), as_numpy(b)
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray) or a.shape != b.shape:
        return False
    try:
        return bool(np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True))
    except (TypeError, ValueError):
        return False


def _named(line: str, found, about) -> None:
    """The answer is these fingerprints' variant: raise the Mismatch that names them (nothing when
    `about` already names each, and nothing else is in it)."""
    named, other = _split_found(found)
    if about is not None and not other and not any(m in about for m, _ in named):
        return
    raise Mismatch(line + "".join(f"\nAlso, {d}." for d in other), found=named, extra=other)


def expect_array(got, expected, *, call: str, kind: str = "numpy",
                 mutants=None,
                 signs: dict[str, Callable[[np.ndarray], bool]] | None = None,
                 inputs: tuple = (), tol: tuple[float, float] | None = None,
                 blocked=None, blocked_what: str = "zero", about=None) -> None:
    """Fail with a diagnosis unless `got` matches `expected` (kind: "numpy" or "torch").

    `inputs` are the arrays the call was given: float32 inputs loosen the tolerance even when
    NumPy promotes the result to float64 (see tolerances.py). `blocked` (bool, the answer's
    shape without its last axis) marks fully blocked query rows; `blocked_what` says in words
    what those rows must be ("zero", "w_o's bias", ...). `about`: the mistake ids this check
    judges (None: all). An answer explained entirely by other catalogued mistakes passes: the
    behaviour under test is right, and the checks about those mistakes report them.
    """
    # from the inputs and the expected answer only: returning float32 must not loosen the check
    rtol, atol = tol or tolerances.for_arrays(*inputs, expected)
    signs = signs or {}
    if kind == "torch":
        import torch
        want_type = torch.Tensor
    else:
        want_type = np.ndarray
    if not isinstance(got, want_type):
        type_name = N_("a torch.Tensor") if kind == "torch" else N_("a NumPy array")
        line = N_("{call} returned {returned}; expected {wanted} of shape {shape}").format(
            call=call, returned=describe_value(got), wanted=type_name, shape=tuple(expected.shape))
        found = [("wrong-type", None)]
        if isinstance(got, (tuple, list)) and got and isinstance(got[0], want_type) \
                and tuple(got[0].shape) == tuple(expected.shape):
            # (output, weights) returned: the output is still diagnosed, so its mistakes are named too
            found = [("wrong-type", N_("it returns {returned} whose first item is the output; return the output "
                                       "alone").format(returned=describe_value(got)))]
            try:
                expect_array(got[0], expected, call=f"the first item returned by {call}", kind=kind,
                             mutants=mutants, signs=signs, inputs=inputs, tol=tol, blocked=blocked,
                             blocked_what=blocked_what, about=about)
            except Mismatch as inner:
                line, found = f"{line}\n{inner.line}", found + inner.found
                raise Mismatch(line, found=found, extra=inner.extra) from None
        raise Mismatch(line, found=found)
    got_np, exp_np = as_numpy(got), as_numpy(expected)
    if AUDIT is not None:
        _audit(call, mutants, exp_np, rtol, atol)
    if got_np.dtype.kind not in "biufc":
        raise Mismatch(N_("{call} returned an array of dtype {dtype}; expected numbers").format(
            call=call, dtype=got_np.dtype), mistake="wrong-type")

    if got_np.shape == exp_np.shape and _close(got_np, exp_np, rtol, atol) \
            and np.array_equal(np.isnan(got_np.astype(np.float64)), np.isnan(exp_np.astype(np.float64))):
        return
    line = summary(call, got_np, exp_np, rtol, atol)
    if got_np.shape == exp_np.shape and got_np.size > 1 and constant(got_np) and not constant(exp_np):
        # every value the same (zeros, a constant): such an answer also equals any fingerprint that is
        # constant on these inputs, which is no evidence of that mistake: name nothing from it
        value = fmt(got_np.reshape(-1)[0]) if got_np.dtype != bool else bool(got_np.reshape(-1)[0])
        raise Mismatch(line + "\n" + N_("Every value of the answer is {value}: it does not depend on the input.").format(value=value))

    # 1. the whole answer is one mistake, or a combination of catalogued mistakes
    computed = []                      # (found, candidate): each mutant runs once per call
    for found, key, make in _candidates(mutants):
        candidate = _try(make)
        computed.append((found, candidate))
        if candidate is not None and _close(got_np, candidate, rtol, atol):
            if key is not None:
                Fingerprints.remember(key)
            return _named(line, found, about)

    # 1b. the same in float16 arithmetic (a float16 table): one mistake to within float16's rounding
    loose = tolerances.float16(exp_np)
    if loose is not None and got_np.shape == exp_np.shape and not _close(got_np, exp_np, *loose):
        for found, candidate in computed:     # (_close: False for another shape or no candidate)
            if _close(got_np, candidate, *loose) and not _close(candidate, exp_np, *loose):
                return _named(line, found, about)

    # 2. fully blocked rows judged on their own, everything else on the other rows
    rows, extra = None, []
    if blocked is not None and got_np.shape == exp_np.shape:
        rows = np.broadcast_to(np.asarray(blocked, dtype=bool), got_np.shape[:-1])
    if rows is not None and rows.any():
        found = []
        g, e = got_np[rows].astype(np.float64), exp_np[rows].astype(np.float64)
        if np.isnan(g).any():
            found.append(("masked-row-nan", N_("{n} fully blocked row(s) come out NaN; they must be {what}").format(
                n=int(np.isnan(g).any(-1).sum()), what=blocked_what)))
        elif not np.allclose(g, e, rtol=rtol, atol=atol):
            found.append(("masked-row-leak", N_("fully blocked rows are not {what}: they still read blocked keys")
                          .format(what=blocked_what)))
        keep = ~rows
        if keep.any() and not _close(got_np[keep], exp_np[keep], rtol, atol):
            for more, candidate in computed:
                if any(m in ("masked-row-nan", "masked-row-leak") for m, _ in more):
                    continue
                if candidate is not None and candidate.shape == got_np.shape \
                        and _close(got_np[keep], candidate[keep], rtol, atol):
                    named, other = _split_found(more)
                    found += named
                    line += "".join(f"\nAlso, {d}." for d in other)
                    extra += other
                    if other and not named:
                        found.append(("", None))   # an uncatalogued deviation: never a pass
                    break
            else:
                found.append(None)   # the other rows are wrong in a way no fingerprint explains
        if found and found[-1] is None:
            found.pop()
            # NaN on exactly the blocked rows is specific; "not zero" is not, when every row is wrong
            found = [f for f in found if f[0] == "masked-row-nan"]
            if found:
                raise Mismatch(line, found=found)
        elif found:
            uncatalogued = ("", None) in found
            found = [f for f in found if f[0]]
            if about is not None and not uncatalogued and not any(m in about for m, _ in found):
                return
            raise Mismatch(line, found=found, extra=extra)
        elif about is not None:
            return

    # 3. signs: every one that holds
    hits = []
    for mistake, test in signs.items():
        try:
            hit = bool(test(got_np))
        except Exception:
            hit = False
        if hit:
            hits.append((mistake, None))
    if hits:
        raise Mismatch(line, found=hits)
    if got_np.shape != exp_np.shape:
        raise Mismatch(f"{call} returned shape {tuple(got_np.shape)}; expected {tuple(exp_np.shape)}",
                       mistake="wrong-shape")
    raise Mismatch(line)


# tests/test_fingerprints_distinct.py sets this to a list: every comparison then records the pairs of
# hypotheses (catalogued variants, each alone) that give the same answer on its inputs, where the
# grader could not tell which one the student has
AUDIT: list | None = None


def _audit(call, mutants, expected, rtol, atol):
    if isinstance(mutants, Fingerprints):
        given = list(mutants._given() or []) if mutants._given is not None else []
        singles = []
        for v in mutants.variants:
            if v.mistake is None or v in given:
                continue
            switches = dict(kv for g in given for kv in g.switches)
            switches.update(v.switches)
            singles.append(((v.mistake, v.detail), lambda s=switches: mutants.run(**s)))
    else:
        items = list(mutants.items()) if isinstance(mutants, dict) else list(mutants or [])
        singles = [((m, detail[0] if detail else None), make) for m, make, *detail in items if m]
    answers = []
    for hypothesis, make in singles:
        candidate = _try(make)
        if candidate is not None and not _close(candidate, expected, rtol, atol):
            answers.append((hypothesis, candidate))
    for i, (h1, a1) in enumerate(answers):
        for h2, a2 in answers[i + 1:]:
            if h1 != h2 and _close(a1, a2, rtol, atol):
                AUDIT.append((call, h1, h2))


def constant(a) -> bool:
    """All the values of an array are equal (or there are none)."""
    a = np.asarray(a)
    if a.size == 0:
        return True
    if a.dtype.kind not in "biufc":
        return False
    a = a.astype(np.float64)
    finite = a[np.isfinite(a)]
    if finite.size < a.size and finite.size:   # finite and non-finite values: not constant
        return False
    return finite.size == 0 or bool(np.ptp(finite) <= 1e-7 * max(1.0, float(np.abs(finite).max())))


def _split_found(found):
    """(catalogued [(id, detail)], details of the uncatalogued deviations)."""
    return [f for f in found if f[0]], [d for m, d in found if not m and d]


def _try(make):
    # one thread: on these tiny tensors PyTorch's thread pool only waits (a float64 softmax takes
    # milliseconds with two threads on a busy machine, microseconds with one)
    torch = loaded_torch()       # a NumPy lesson's mutants never need it
    threads = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    try:
        with np.errstate(all="ignore"):
            candidate = make()
    except Exception:  # a mutant that does not apply to these inputs
        return None
    finally:
        if torch is not None:
            torch.set_num_threads(threads)
    return None if candidate is None else as_numpy(candidate)
