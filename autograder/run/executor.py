"""Runs a student's code and answers the grader's requests about it.

The same Executor serves two places: inside the isolated worker process (real grading) and
inside a student's own notebook kernel (the self-check cells). Every answer leaves as wire data,
so both places give the grader the same thing to compare.
"""
from __future__ import annotations

import inspect
import random
import sys
import traceback

import numpy as np

from autograder.run import wire
from autograder.run.bounds import TRACEBACK, TYPE_NAME, clip
from autograder.run.substitute import SubstitutionOps

CELL_PREFIX = "<cell "
SEED = 20261121


def student_traceback(exc: BaseException, limit: int = 6) -> str:
    """The traceback lines that point into the student's cells, newest last."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(CELL_PREFIX)]
    if isinstance(exc, SyntaxError) and exc.filename and exc.filename.startswith(CELL_PREFIX):
        text = (exc.text or "").rstrip()
        return f'  {exc.filename[1:-1]}, line {exc.lineno}\n    {text}'
    lines = []
    for f in frames[-limit:]:
        lines.append(f"  {f.filename[1:-1]}, line {f.lineno}, in {f.name}")
        if f.line:
            lines.append(f"    {f.line}")
    return "\n".join(lines)


def describe_error(exc: BaseException) -> dict:
    message = str(exc)
    if len(message) > 600:
        message = message[:600] + " ..."
    # the grader cuts each again whatever this sends (StudentError): here it only saves the frame
    return {"type": clip(type(exc).__name__, TYPE_NAME), "message": message,
            "traceback": clip(student_traceback(exc), TRACEBACK)}


def too_large(value, exc: Exception) -> dict:
    """The error reply for an answer the grader would refuse to read (wire.TooLarge): what was
    returned (an op_call's result, not the reply around it), and which limit it passed."""
    if type(value) is dict and "result" in value:
        value = value["result"]
    try:
        what = sized(value)
    except BaseException:  # noqa: B902 - a student's subclass may raise anything: its type is known
        what = f"a {clip(type(value).__name__, TYPE_NAME)}"
    return {"type": wire.ANSWER_TOO_LARGE, "traceback": "",
            "message": f"the answer was too large to be read: it was {what}; {exc}"}


def sized(value) -> str:
    """A value's type and size in words ("a dict of 1,000,000 items", "a float64 array of shape
    (13000000,), 99.2 MB"), without touching its items (they are the student's objects)."""
    name = clip(type(value).__name__, TYPE_NAME)
    torch = sys.modules.get("torch")
    if isinstance(value, np.ndarray) or (torch is not None and isinstance(value, torch.Tensor)):
        nbytes = value.nbytes if isinstance(value, np.ndarray) else value.element_size() * value.nelement()
        kind = "array" if isinstance(value, np.ndarray) else "tensor"
        return f"a {value.dtype} {kind} of shape {tuple(value.shape)}, {nbytes / 2**20:.1f} MB"
    if type(value) in (list, tuple, dict, set, frozenset, str, bytes):
        return f"a {name} of {len(value):,} {'characters' if type(value) is str else 'items'}"
    return f"a {name}"


def seed_everything(seed: int = SEED) -> None:
    """Same seeds before every call: the same submission always gets the same grade."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    import sys
    torch = sys.modules.get("torch")
    if torch is not None:
        # the CPU generator is what the lessons draw from. torch.manual_seed would also queue a
        # lazy CUDA seeding with a formatted stack trace on every call (~0.1 ms, and a list that
        # grows), which is most of the cost of a small request
        torch.default_generator.manual_seed(seed)
        if torch.cuda.is_initialized():
            torch.cuda.manual_seed_all(seed)


def read_only(value, keep=frozenset()):
    """`value` with every NumPy array in it (in lists, tuples and dicts too) replaced by a copy
    whose memory is an immutable bytes object: writing into it raises ValueError ("... is
    read-only"), and its WRITEABLE flag cannot be set again (NumPy refuses for such memory).
    Torch tensors are left as they are (torch has no read-only tensors). Arrays whose id is in
    `keep` stay as they are: those are read-only views of the grader's shared memory, which the
    grader reads back itself after the call (a write that gets past the flag lands there)."""
    if type(value) is np.ndarray:
        if value.dtype.hasobject or id(value) in keep:
            return value
        frozen = np.frombuffer(value.tobytes(), dtype=value.dtype)
        return frozen.reshape(value.shape)
    if isinstance(value, list):
        return [read_only(v, keep) for v in value]
    if type(value) is tuple:
        return tuple(read_only(v, keep) for v in value)
    if type(value) is dict:
        return {k: read_only(v, keep) for k, v in value.items()}
    return value


def _without(value, drop):
    """`value` with the objects whose id is in `drop` replaced by None (they need no report)."""
    if id(value) in drop:
        return None
    if type(value) in (list, tuple):
        return type(value)(_without(v, drop) for v in value)
    if type(value) is dict:
        return {k: _without(v, drop) for k, v in value.items()}
    return value


def map_shared(fds):
    """Map the grader's shared memory (the first of `fds`; every fd is closed here). Returns a
    ctypes buffer over it, unmapped once nothing uses it any more, or None without fds."""
    import ctypes
    import os
    import weakref
    for extra in fds[1:]:
        os.close(extra)
    if not fds:
        return None
    try:
        size = os.fstat(fds[0]).st_size
        if size <= 0:
            return None
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        address = libc.mmap(None, size, 0x1 | 0x2, 0x01, fds[0], 0)   # PROT_READ|PROT_WRITE, MAP_SHARED
        if address is None or address == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "mmap of the grader's shared memory")
    finally:
        os.close(fds[0])
    buffer = (ctypes.c_char * size).from_address(address)
    weakref.finalize(buffer, libc.munmap, address, size)
    return buffer


class Executor(SubstitutionOps):
    def __init__(self, namespace: dict | None = None):
        self.ns = namespace if namespace is not None else {"__name__": "__main__"}
        self.handles: dict[int, object] = {}
        self.shared: frozenset = frozenset()   # ids of this request's arrays in the grader's memory
        self.substituted: list = []            # (globals, name, what was there) to put back
        self.ask = None                        # question -> the grader's reply (Asks, run/substitute.py)

    # -- objects that stay here --------------------------------------------------------
    def _handle_for(self, obj) -> dict:
        number = len(self.handles) + 1
        self.handles[number] = obj
        name = obj.__name__ if isinstance(obj, type) else type(obj).__name__
        node = {"$handle": number, "type": str(name)}
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.nn.Module):
            node["module"] = True   # what the grader expects of a graded class's instance
            try:   # what op_parameters would answer next, sent now: the checks ask it of every module
                node["parameters"] = [[str(n), [int(d) for d in p.shape]] for n, p in obj.named_parameters()]
            except BaseException:   # noqa: B902 - the student's module; the grader asks again if it wants them
                pass
        return node

    def _object(self, number: int, type_name: str):
        if number not in self.handles:
            raise LookupError(f"no object number {number}")
        return self.handles[number]

    def _class(self, name: str, source: str):
        import math
        import torch
        from torch import nn
        from torch.nn import functional as F
        scope = {"__name__": f"course_{name}", "math": math, "np": np, "torch": torch, "nn": nn, "F": F}
        exec(compile(source, f"<course class {name}>", "exec"), scope)
        return scope[name]

    # -- requests ----------------------------------------------------------------------
    def handle(self, frame: bytes, fds=()) -> bytes:
        """Answer one request frame with one reply frame (never raises). `fds`: the grader's
        shared memory for a watched call's arguments, if it sent one."""
        try:
            seen: list = []
            request = wire.decode(frame, objects=self._object, classes=self._class,
                                  shared=map_shared(list(fds)), seen=seen)
            self.shared = frozenset(map(id, seen))
            op = request["op"]
            result = getattr(self, "op_" + op)(**request.get("args", {}))
            reply = {"ok": True, "value": result}
        except BaseException as exc:  # noqa: B902 - SystemExit, KeyboardInterrupt are the student's too
            reply = {"ok": False, "error": describe_error(exc)}
        try:
            return wire.encode(reply, handle_for=self._handle_for, bounded=True)
        except wire.TooLarge as exc:   # an error of the call, said as one: the process is fine
            return wire.encode({"ok": False, "error": too_large(reply.get("value"), exc)})
        except BaseException as exc:  # an answer that cannot even be encoded
            return wire.encode({"ok": False, "error": {
                "type": "UnencodableResult", "message": f"{type(exc).__name__}: {exc}"[:300], "traceback": ""}})

    def op_exec(self, label: str, source: str):
        code = compile(source, f"{CELL_PREFIX}{label}>", "exec")
        seed_everything()
        exec(code, self.ns)
        return None

    def _target(self, target):
        kind, *rest = target
        if kind == "name":
            name = rest[0]
            if name not in self.ns:
                raise NameError(f"name {name!r} is not defined")
            return self.ns[name]
        obj = self._object(rest[0], "")
        return obj if rest[1] is None else getattr(obj, rest[1])

    def op_call(self, target, args=(), kwargs=None, return_args=False):
        fn = self._target(target)
        args = [read_only(a, self.shared) for a in args]
        kwargs = {k: read_only(v, self.shared) for k, v in (kwargs or {}).items()}
        seed_everything()
        result = fn(*args, **kwargs)
        if return_args:   # arrays in the grader's memory: the grader reads them itself
            return {"result": result, "args": _without(args, self.shared), "kwargs": _without(kwargs, self.shared)}
        return {"result": result}

    def op_isolated_call(self, target, args=(), kwargs=None, seconds=5.0):
        """A call whose outcome is reported, never its value: {"outcome": "returned"} or
        {"outcome": "raised", "error": {...}}. Only the notebook's own kernel (the self-check)
        uses this op; grading runs such calls each in a fresh sandboxed child of its own
        (isolate/submission.py, Submission.fresh_call), never in a fork of this process."""
        try:
            self.op_call(target, args, kwargs)
            return {"outcome": "returned"}
        except BaseException as exc:  # noqa: B902
            return {"outcome": "raised", "error": describe_error(exc)}

    def op_traced_call(self, target, args=(), kwargs=None, trace=True):
        """A call whose peak allocation tracemalloc measures: {"result", "peak"} (bytes NumPy and
        Python allocated beyond what they held before the call). In grading, the process runs it
        under an address-space limit its worker set from outside (Submission.limited_call): the
        peak, a figure from the student's own process, only describes; the limit is what holds.
        Without `trace` (stand-ins asking the grader, whose every frame tracemalloc would slow
        fourfold), the limit alone: "peak" is None."""
        import tracemalloc
        fn = self._target(target)
        args = [read_only(a, self.shared) for a in args]
        kwargs = {k: read_only(v, self.shared) for k, v in (kwargs or {}).items()}
        seed_everything()
        if not trace:
            return {"result": fn(*args, **kwargs), "peak": None}
        tracing = tracemalloc.is_tracing()     # a student's own tracemalloc session is left running
        if tracing:
            tracemalloc.reset_peak()
        else:
            tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            result = fn(*args, **kwargs)
            peak = tracemalloc.get_traced_memory()[1] - before
        finally:
            if not tracing:
                tracemalloc.stop()
        return {"result": result, "peak": int(peak)}

    def op_signature(self, target):
        try:
            return str(inspect.signature(self._target(target)))
        except (TypeError, ValueError):
            return None

    def op_layers(self):
        """The isolation layers this process confined itself with (isolation/confine.py)."""
        return list(getattr(self, "layers", []))

    def op_assign(self, values):
        """Bind module-level names of the notebook (lesson 04's checks put hidden inputs in place
        of the setup cell's X, W and PUBLISHED under a course secret)."""
        if not isinstance(values, dict) or not all(isinstance(k, str) and k.isidentifier() for k in values):
            raise TypeError("assign takes {name: value}")
        self.ns.update(values)
        return None

    def op_names(self):
        return sorted(k for k in self.ns if not k.startswith("_"))

    def op_parameters(self, handle):
        module = self._object(handle, "")
        return {name: tuple(p.shape) for name, p in module.named_parameters()}

    def op_load_parameters(self, handle, values, strict=True, mode=None):
        """Copy known values into the student's parameters, by name (never by creation order);
        then, with `mode`, module.train(mode) (one request where the checks would send two)."""
        import torch
        module = self._object(handle, "")
        own = dict(module.named_parameters())
        missing = [name for name in values if name not in own]
        if missing and strict:
            raise AttributeError(
                f"{type(module).__name__} has no parameter(s) {', '.join(missing)}; "
                f"its parameters are: {', '.join(own) or 'none'}")
        with torch.no_grad():
            for name, value in values.items():
                if name not in own:
                    continue
                if tuple(own[name].shape) != tuple(value.shape):
                    raise ValueError(f"parameter {name} has shape {tuple(own[name].shape)}, "
                                     f"expected {tuple(value.shape)}")
                own[name].copy_(value.to(own[name].dtype))
        if mode is not None:
            module.train(bool(mode))
        return None

    def op_train(self, handle, mode=True):
        self._object(handle, "").train(mode)
        return None

    def op_gradients(self, handle, args=(), kwargs=None, weight=None):
        """Run forward, back-propagate sum(output * weight), return each parameter's gradient."""
        module = self._object(handle, "")
        module.zero_grad(set_to_none=True)
        seed_everything()
        out = module(*args, **(kwargs or {}))
        loss = (out * weight).sum() if weight is not None else out.sum()
        loss.backward()
        return {name: (None if p.grad is None else p.grad.detach().clone())
                for name, p in module.named_parameters()}
