"""Recorded answers: what the student kit's self-checks compare with, as data and nothing else.

`python -m autograder release --student-kit OUT` runs every check of the course against the
reference on the public inputs (the `rng` fixture's seed without a course secret) and records
each answer the checks asked for: a call of the reference (`reference.softmax(x)`), of a
reference class and its methods, of `checking.reference_output`, and of every mutant engine
(the fingerprints diagnosis compares with). Each answer is stored under a digest of what was
asked (the function's name, its arguments with their dtypes, shapes and bytes, its switches).

In the kit this module stands where the reference and the mutant engine stand in the course:
`reference` is a `Replay` namespace, `mutants` a `Replay` module and `reference_output` a
lookup (`replay_bound`). A question that was recorded gets its recorded answer; any other raises `NotRecorded`.
Nothing here computes anything, so nothing here can answer a new question.

Files (in the kit's autograder/records/): `index.json` (digest -> answer, arrays by number) and
`arrays.npz` (the arrays, loaded with allow_pickle=False).
"""
from __future__ import annotations

import builtins
import copy
import functools
import hashlib
import json
from pathlib import Path

import numpy as np

RECORDS = Path(__file__).resolve().parents[1] / "records"    # autograder/records/ in the kit
PUBLIC_INPUTS_ONLY = True     # the kit grades on the public inputs: plugin.py never seeds from a secret here


class NotRecorded(LookupError):
    """The self-check asked a question whose answer the kit does not hold."""


# ----------------------------------------------------------------------------- digests

def _feed(h, x) -> None:
    """Feed a canonical, type-tagged form of `x` to the hash `h`."""
    if isinstance(x, Handle):
        h.update(b"H" + x.key.encode())
        return
    if x is None or isinstance(x, (bool, int, str)):
        h.update(f"{type(x).__name__}:{x!r};".encode())
        return
    if isinstance(x, float):
        h.update(b"float:" + float(x).hex().encode() + b";")
        return
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        h.update(f"nd:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
        return
    if isinstance(x, (tuple, list)):
        h.update(f"{type(x).__name__}:{len(x)}(".encode())
        for item in x:
            _feed(h, item)
        h.update(b")")
        return
    if isinstance(x, dict):
        h.update(f"dict:{len(x)}(".encode())
        for k in sorted(x, key=repr):
            _feed(h, k)
            _feed(h, x[k])
        h.update(b")")
        return
    if isinstance(x, (set, frozenset)):
        h.update(f"set:{len(x)}(".encode())
        for item in sorted(x, key=repr):
            _feed(h, item)
        h.update(b")")
        return
    try:
        import torch
    except ImportError:  # pragma: no cover
        torch = None
    if torch is not None and isinstance(x, torch.Tensor):
        a = x.detach().cpu().contiguous().numpy()
        h.update(f"pt:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
        return
    if torch is not None and isinstance(x, torch.dtype):
        h.update(f"dtype:{x};".encode())
        return
    raise TypeError(f"cannot key a recorded call on a {type(x).__name__}")


def digest(*parts) -> str:
    h = hashlib.sha256()
    for part in parts:
        _feed(h, part)
    return h.hexdigest()[:32]


class Handle:
    """What a recorded object (a reference module) is known by: the calls that made it so far."""
    key: str


# ----------------------------------------------------------------------------- answers as data

def encode(value, arrays: list, seen: dict):
    """A JSON-able form of an answer; arrays go to `arrays` (deduplicated by content)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, np.generic):
        return {"scalar": encode(np.asarray(value), arrays, seen)}
    kind = "nd"
    try:
        import torch
        if isinstance(value, torch.Tensor):
            kind, value = "pt", value.detach().cpu().contiguous().numpy()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(value, np.ndarray):
        a = np.ascontiguousarray(value)
        if a.dtype.hasobject:
            raise TypeError("object arrays are not recorded")
        key = (a.dtype.str, a.shape, hashlib.sha256(a.tobytes()).hexdigest())
        if key not in seen:
            seen[key] = len(arrays)
            arrays.append(a)
        return {kind: seen[key]}
    if isinstance(value, tuple):   # namedtuples (load_state_dict's answer) become plain tuples
        return {"tuple": [encode(v, arrays, seen) for v in value]}
    if isinstance(value, list):
        return {"list": [encode(v, arrays, seen) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted((encode(v, arrays, seen) for v in value), key=json.dumps)}
    if isinstance(value, dict):
        return {"dict": [[encode(k, arrays, seen), encode(v, arrays, seen)] for k, v in value.items()]}
    raise TypeError(f"a {type(value).__name__} is not data")


def decode(form, arrays):
    if form is None or isinstance(form, (bool, str)):
        return form
    (kind, body), = form.items()
    if kind == "int":
        return body
    if kind == "float":
        return float.fromhex(body)
    if kind == "scalar":
        return decode(body, arrays)[()]
    if kind == "nd":
        return arrays(body).copy()
    if kind == "pt":
        import torch
        return torch.from_numpy(arrays(body).copy())
    if kind == "tuple":
        return tuple(decode(v, arrays) for v in body)
    if kind == "list":
        return [decode(v, arrays) for v in body]
    if kind == "set":
        return {decode(v, arrays) for v in body}
    if kind == "dict":
        return {decode(k, arrays): decode(v, arrays) for k, v in body}
    raise ValueError(f"unknown recorded form {kind!r}")


# ----------------------------------------------------------------------------- replay

class Tape:
    """The recorded answers: {digest: entry}; an entry is {"value": form}, {"kind": "callable"},
    {"kind": "object"}, {"kind": "self"} or {"raised": [type name, message]}."""

    def __init__(self, folder: Path = RECORDS):
        self.folder = folder
        index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
        self.entries = index["answers"]
        self._calls, self._decoded = index.get("calls", {}), {}
        self._npz = None

    def calls(self, lesson: str, name: str, args: list, kwargs: dict) -> list:
        """[(args, kwargs, answer)]: the calls of helper `name` recorded at release that may be this one
        (same shapes, and a first number within float32 rounding of its: see call_answer)."""
        import bisect
        key = (lesson, name)
        if key not in self._decoded:
            index: dict = {}
            for form in self._calls.get(lesson, {}).get(name, []):
                call = decode(form, self.array)
                index.setdefault(_shapes(call[:2]), []).append((_first(call[:2]) or 0.0, call))
            self._decoded[key] = {k: sorted(v, key=lambda e: e[0]) for k, v in index.items()}
        bucket = self._decoded[key].get(_shapes([args, kwargs]), [])
        first = _first([args, kwargs]) or 0.0
        lo = bisect.bisect_left(bucket, first - 1e-5 * (1 + abs(first)), key=lambda e: e[0])
        hi = bisect.bisect_right(bucket, first + 1e-5 * (1 + abs(first)), key=lambda e: e[0])
        return [call for _, call in bucket[lo:hi]]

    def array(self, number: int) -> np.ndarray:
        if self._npz is None:
            self._npz = np.load(self.folder / "arrays.npz", allow_pickle=False)
        return self._npz[f"a{number}"]

    def answer(self, key: str, what: str):
        entry = self.entries.get(key)
        if entry is None:
            raise NotRecorded(f"{what}: this input is not in the recorded self-check data. The kit's self-checks "
                              "hold the answers to the course's own check inputs only; if you changed nothing "
                              "but your exercise, please tell your instructor.")
        if "raised" in entry:
            kind, message = entry["raised"]
            exc = getattr(builtins, kind, None)
            if isinstance(exc, type) and issubclass(exc, Exception):
                raise exc(message)
            raise RuntimeError(f"{kind}: {message}")
        if "value" in entry:
            return "value", decode(entry["value"], self.array)
        return entry["kind"], None


@functools.lru_cache(maxsize=None)
def tape() -> Tape:
    return Tape()


class _Call(Handle):
    """A recorded callable (a reference function or class, a mutant function, a method)."""

    def __init__(self, key: str, what: str, owner: "_Object | None" = None):
        self.key, self.what, self.owner = key, what, owner

    def __call__(self, *args, **kwargs):
        base = self.owner.key if self.owner is not None else self.key
        key = digest(base, self.what if self.owner is not None else "", args, kwargs)
        if self.owner is not None:
            self.owner.key = key             # a method call changes the object's state
        kind, value = tape().answer(key, f"{self.what}(...)")
        if kind == "value":
            return value
        if kind == "self":
            return self.owner
        return _Object(key, self.what)


class _Object(Handle):
    """A recorded instance (a reference module): its methods and attributes are recorded calls."""

    def __init__(self, key: str, what: str):
        self.key, self.what = key, what

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        kind, value = tape().answer(digest(self.key, "getattr", name), f"{self.what}.{name}")
        return value if kind == "value" else _Call(self.key, name, owner=self)

    def __call__(self, *args, **kwargs):
        return _Call(self.key, "__call__", owner=self)(*args, **kwargs)


class Replay:
    """A namespace (the reference solution of a lesson, or the mutant engine) answered from the tape."""

    def __init__(self, scope: str):
        self._scope = scope

    def answer_call(self, name: str, args: list, kwargs: dict):
        """A helper's answer for a stand-in (grading/independence.py, reference_answer)."""
        return call_answer(self._scope.split(":", 1)[-1], name, args, kwargs)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        key = digest("attr", self._scope, name)
        kind, value = tape().answer(key, f"{self._scope}.{name}")
        if kind == "value":
            return value
        return _Call(digest("call", self._scope, name), f"{self._scope}.{name}")


def _numbers(value):
    """`value` as a NumPy array if it is an array or a tensor, else None."""
    if hasattr(value, "detach"):
        return value.detach().numpy()
    return value if isinstance(value, np.ndarray) else None


def _shapes(value) -> tuple:
    """What a call is filed under: its structure, with each array's shape and kind."""
    a = _numbers(value)
    if a is not None:
        return ("a", a.shape, a.dtype.str)
    if isinstance(value, (list, tuple)):
        return ("l",) + tuple(_shapes(v) for v in value)
    if isinstance(value, dict):
        return ("d",) + tuple((k, _shapes(v)) for k, v in sorted(value.items(), key=lambda kv: repr(kv[0])))
    return ("v", repr(value)) if isinstance(value, (bool, int, str, type(None))) else ("v", type(value).__name__)


def _first(value) -> float | None:
    """The first finite number of the first float array in `value` that has one (None without)."""
    a = _numbers(value)
    if a is not None:
        if a.dtype.kind != "f":
            return None
        finite = a.ravel()[np.isfinite(a.ravel())]
        return float(finite[0]) if finite.size else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    return next((f for f in map(_first, items) if f is not None), None)


def _close(a, b) -> bool:
    """Arguments equal to float32 rounding (a correct exercise computes them in its own order)."""
    a = _numbers(a) if _numbers(a) is not None else a
    b = _numbers(b) if _numbers(b) is not None else b
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            return bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def call_answer(lesson: str, name: str, args: list, kwargs: dict):
    """The reference's answer to a helper call a stand-in asks about (grading/independence.py), if the
    same call (to float32 rounding) was recorded at release; else NotRecorded."""
    for given, keywords, answer in tape().calls(lesson, name, list(args), dict(kwargs)):
        if _close(list(given), list(args)) and _close(dict(keywords), dict(kwargs)):
            return copy.deepcopy(answer)
    raise NotRecorded(f"{name}(...): this call is not in the recorded self-check data")


def load_reference(lesson_id: str) -> Replay:
    """The `reference` fixture in the kit."""
    return Replay(f"reference:{lesson_id}")


mutants = Replay("mutants")


def bound_key(scope: str, name: str, arguments: dict) -> str:
    """The digest of a call known by its bound arguments (defaults applied), however it was written."""
    return digest(digest("call", scope, name), "bound", dict(arguments))


def replay_bound(scope: str, name: str, arguments: dict):
    """The recorded answer of `scope.name(**arguments)` (checking.reference_output in the kit)."""
    kind, value = tape().answer(bound_key(scope, name, arguments), f"{scope}.{name}(...)")
    if kind != "value":
        raise NotRecorded(f"{scope}.{name}: the recorded answer is not data")
    return value


__all__ = ["NotRecorded", "Replay", "load_reference", "mutants", "replay_bound", "digest"]
