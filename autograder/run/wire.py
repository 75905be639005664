"""The data format between the grader and a student's worker process.

Everything a student's code returns is turned into plain data (numbers, strings, lists,
dicts, arrays) before it leaves the worker, and the grader decodes it without running any
code: a JSON header plus raw array bytes, read with a dtype whitelist. pickle is not used on
purpose: unpickling lets the sender run code in the receiver, and the sender here is
untrusted. Objects that are not data (a student's nn.Module, a class) stay in the worker
and travel as numbered handles.

Frame: 8-byte big-endian header length, the JSON header, then the array buffers back to back.
A call whose arguments the grader watches sends its arrays in memory the grader owns instead
(`shared`: a memfd passed with the frame); the worker builds its arrays and tensors over that
memory, and the grader reads it back itself after the call (isolate/watch.py).
"""
from __future__ import annotations

import json
import math
import struct

import numpy as np

from autograder.run.bounds import TYPE_NAME, clip

MAX_MESSAGE_BYTES = 64 * 1024 * 1024   # a student's answer is small; refuse absurd frames
MAX_HEADER_BYTES = 8 * 1024 * 1024     # the JSON part: structure and numbers, never bulk data
MAX_ARRAYS = 10_000
# JSON values in a header: each costs the receiver up to ~70 bytes, twice (parsed, then rebuilt), so
# 8 MB of `[],[],...` would cost the grader 400 MB; answers are arrays plus a little structure
MAX_HEADER_VALUES = 250_000
MAX_DEPTH = 32
_ALLOWED_DTYPES = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
}


class Opaque:
    """A value the worker could not turn into data (it stays unknown to the grader)."""

    def __init__(self, type_name: str, why: str = ""):
        self.type_name = type_name
        self.why = why

    def __repr__(self):
        return f"<{self.type_name} object>"


class Handle:
    """A reference to an object that lives in the worker (a module, a class, ...). `parameters`:
    for an nn.Module, its parameters' shapes as the worker reported them with the handle
    ({name: shape}), which saves the grader a `parameters` request; None when not sent. `module`:
    the worker said the object is an nn.Module."""

    def __init__(self, number: int, type_name: str = "object", parameters: dict | None = None,
                 module: bool = False):
        self.number = number
        self.type_name = type_name
        self.parameters = parameters
        self.module = module

    def __repr__(self):
        return f"<handle {self.number}: {self.type_name}>"


class ClassSource:
    """A class the grader asks the worker to build from source (lesson 06's test subjects)."""

    def __init__(self, name: str, source: str):
        self.name = name
        self.source = source


class WireError(Exception):
    """A frame that is not well formed."""


class TooLarge(WireError):
    """A value past the limits a receiver accepts (encode(..., bounded=True)): the sender says so
    instead of sending a frame the receiver would refuse. The message names the limit passed."""


ANSWER_TOO_LARGE = "AnswerTooLarge"   # the type of the error the worker replies with instead
VALUES_LIMIT = f"the limit is {MAX_HEADER_VALUES:,} values (numbers, strings, list and dict items)"


# ---------------------------------------------------------------------------- encoding

def encode(value, *, handle_for=None, shared: list | None = None, bounded: bool = False) -> bytes:
    """Turn `value` into a frame. `handle_for(obj)` registers non-data objects (worker side).
    With `shared` (a list), arrays are not put in the frame: their bytes are appended to `shared`
    as (offset, bytes), for the sender to place in shared memory at those offsets. With `bounded`
    (the worker's replies), a value the receiver would refuse (see recv) raises TooLarge, as soon
    as that is known: before its bytes are copied."""
    buffers: list[bytes] = []
    specs: list[list] = []
    counted = {"values": 0, "array bytes": 0}

    def array(arr: np.ndarray, kind: str, torch_dtype: str | None = None):
        if arr.dtype.name not in _ALLOWED_DTYPES:
            return {"$opaque": f"array of dtype {arr.dtype}"}
        if bounded:
            counted["array bytes"] += arr.nbytes
            if len(specs) >= MAX_ARRAYS:
                raise TooLarge(f"the limit is {MAX_ARRAYS:,} arrays")
            if counted["array bytes"] > MAX_MESSAGE_BYTES:
                raise TooLarge(f"the limit is {MAX_MESSAGE_BYTES // 2**20} MB of array data")
            if any(d > MAX_MESSAGE_BYTES for d in arr.shape):
                raise TooLarge(f"the limit is {MAX_MESSAGE_BYTES:,} items along an array's axis")
        arr = np.ascontiguousarray(arr)
        if shared is not None:
            end = shared[-1][0] + len(shared[-1][1]) if shared else 0
            offset = -(-end // 64) * 64          # each array 64-byte aligned
            shared.append((offset, arr.tobytes()))
            node = {"$shared": [arr.dtype.name, list(arr.shape), offset], "kind": kind}
        else:
            specs.append([arr.dtype.name, list(arr.shape)])
            buffers.append(arr.tobytes())
            node = {"$array": len(specs) - 1, "kind": kind}
        if torch_dtype:
            node["torch_dtype"] = torch_dtype
        return node

    def walk(obj, depth):
        if depth > MAX_DEPTH:
            return {"$opaque": "nested too deeply"}
        counted["values"] += 1
        if bounded and counted["values"] > MAX_HEADER_VALUES:
            # each value costs at least one `[`, `{` or `,` in the header: the receiver would refuse it
            raise TooLarge(VALUES_LIMIT)
        t = type(obj)
        if obj is None or t is bool or t is str:
            return obj
        if t is int:
            return obj if abs(obj) < 2**63 else float(obj)
        if t is float:
            return _float(obj)
        if t in (list, tuple, set, frozenset):
            items = [walk(x, depth + 1) for x in list(obj)]
            if t is list:
                return items
            return {"$tuple" if t is tuple else "$set": items}
        if t is dict:
            return {"$dict": [[walk(k, depth + 1), walk(v, depth + 1)] for k, v in list(obj.items())]}
        if isinstance(obj, Handle):
            return {"$handle": obj.number, "type": obj.type_name}
        if isinstance(obj, ClassSource):
            return {"$class": obj.name, "source": obj.source}
        if isinstance(obj, np.generic):
            return walk(obj.item(), depth + 1) if obj.dtype.name in _ALLOWED_DTYPES else {"$opaque": type(obj).__name__}
        if isinstance(obj, np.ndarray):
            return array(np.asarray(obj), "numpy")
        torch = _torch()
        if torch is not None and isinstance(obj, torch.Tensor):
            t_obj = obj.detach().cpu()
            if t_obj.dtype in (torch.bfloat16,):
                t_obj = t_obj.float()
            if t_obj.is_conj():
                t_obj = t_obj.resolve_conj()
            return array(t_obj.numpy(), "torch", str(obj.dtype))
        if handle_for is not None:
            return handle_for(obj)
        return {"$opaque": type(obj).__name__}

    header = json.dumps({"value": walk(value, 0), "buffers": specs}, allow_nan=True).encode()
    if bounded and len(header) > MAX_HEADER_BYTES:
        raise TooLarge(f"the limit is {MAX_HEADER_BYTES // 2**20} MB of numbers, text and structure besides "
                       f"arrays (it had {len(header) / 2**20:.1f} MB)")
    if bounded and _values(header) > MAX_HEADER_VALUES:
        raise TooLarge(VALUES_LIMIT)
    return struct.pack(">Q", len(header)) + header + b"".join(buffers)


def _float(x: float):
    if math.isnan(x):
        return {"$float": "nan"}
    if math.isinf(x):
        return {"$float": "inf" if x > 0 else "-inf"}
    return x


# ---------------------------------------------------------------------------- decoding

def decode(frame: bytes, *, objects=None, classes=None, tensors: bool = True, shared=None, seen=None,
           max_text: int | None = None):
    """Turn a frame back into Python data. Never runs code from the frame.

    `objects(number, type_name)` builds the receiver's view of a handle; `classes(name, source)`
    builds a class from source (worker side only). With `tensors`, arrays that were torch
    tensors come back as torch tensors. `shared` is the memory a frame's "$shared" arrays live
    in: NumPy arrays are read-only views of it, tensors writable ones (a write into either
    reaches that memory); each such object is appended to `seen`. With `max_text` (the grader
    reading a child's reply), every string is cut to that many characters (run/bounds.py); type
    names always are.
    """
    if len(frame) < 8:
        raise WireError("frame too short")
    (n,) = struct.unpack(">Q", frame[:8])
    if n > len(frame) - 8 or n > MAX_HEADER_BYTES:
        raise WireError("header longer than the frame or the limit")
    header, specs = _header(frame[8:8 + n])
    tree = header["value"]
    arrays = []
    offset = 8 + n
    for dtype_name, shape in specs:
        dtype = np.dtype(dtype_name)
        size = dtype.itemsize * math.prod(shape)
        if offset + size > len(frame):
            raise WireError("array data runs past the frame")
        array = np.frombuffer(frame, dtype=dtype, count=size // dtype.itemsize, offset=offset).reshape(shape)
        # a frame from recv() is a buffer of its own: its arrays are views of it, never a second copy
        arrays.append(array if isinstance(frame, bytearray) else array.copy())
        offset += size

    def walk(node, depth):
        if depth > MAX_DEPTH + 2:
            raise WireError("nested too deeply")
        if isinstance(node, str):
            return node if max_text is None else clip(node, max_text)
        if node is None or isinstance(node, (bool, int, float)):
            return node
        if isinstance(node, list):
            return [walk(x, depth + 1) for x in node]
        if not isinstance(node, dict) or len(node) == 0:
            raise WireError("unexpected node")
        if "$array" in node:
            arr = arrays[node["$array"]]
            if tensors and node.get("kind") == "torch":
                torch = _torch(required=True)
                return torch.from_numpy(arr)
            return arr
        if "$shared" in node:
            value = _shared_array(shared, node["$shared"], tensors and node.get("kind") == "torch")
            if seen is not None:
                seen.append(value)
            return value
        if "$float" in node:
            return float(node["$float"])
        if "$tuple" in node:
            return tuple(walk(x, depth + 1) for x in node["$tuple"])
        if "$set" in node:
            items = [walk(x, depth + 1) for x in node["$set"]]
            try:
                return set(items)
            except TypeError:
                return Opaque("set", "holds unhashable items")
        if "$dict" in node:
            out = {}
            for k, v in node["$dict"]:
                key = walk(k, depth + 1)
                try:
                    out[key] = walk(v, depth + 1)
                except TypeError:
                    return Opaque("dict", "has unhashable keys")
            return out
        if "$opaque" in node:
            return Opaque(clip(node["$opaque"], TYPE_NAME))
        if "$handle" in node:
            number, type_name = int(node["$handle"]), clip(node.get("type", "object"), TYPE_NAME)
            handle = objects(number, type_name) if objects else Handle(number, type_name)
            if isinstance(handle, Handle):
                handle.module = node.get("module") is True
                if "parameters" in node:
                    handle.parameters = _shapes(node["parameters"])
            return handle
        if "$class" in node:
            if classes is None:
                raise WireError("class sources only travel to the worker")
            return classes(str(node["$class"]), str(node["source"]))
        raise WireError(clip(f"unknown node {sorted(node)[:3]}", TYPE_NAME))

    try:
        return walk(tree, 0)
    except (IndexError, KeyError, TypeError, ValueError, RecursionError, OverflowError) as exc:
        raise WireError(f"malformed value: {type(exc).__name__}") from None


def _shapes(node) -> dict | None:
    """{name: shape} from a handle's [[name, [dims]], ...]; None for anything else (the sender is
    untrusted: a malformed list only costs the grader the request it would have saved)."""
    if not isinstance(node, list):
        return None
    out = {}
    for item in node:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list)
                and len(item[1]) <= 32 and all(type(d) is int and d >= 0 for d in item[1])):
            return None
        out[clip(item[0], TYPE_NAME)] = tuple(item[1])
    return out


def _shared_array(memory, spec, as_tensor: bool):
    if memory is None:
        raise WireError("a shared array without shared memory")
    dtype_name, shape, offset = spec
    if dtype_name not in _ALLOWED_DTYPES or not all(type(d) is int and d >= 0 for d in [*shape, offset]):
        raise WireError("bad shared array spec")
    dtype = np.dtype(dtype_name)
    count = math.prod(shape)
    if offset + count * dtype.itemsize > memoryview(memory).nbytes:
        raise WireError("shared array runs past its memory")
    array = np.frombuffer(memory, dtype=dtype, count=count, offset=offset).reshape(shape)
    if as_tensor:
        return _torch(required=True).from_numpy(array if array.flags.writeable else array.copy())
    array.flags.writeable = False
    return array


def _torch(required: bool = False):
    import sys
    torch = sys.modules.get("torch")
    if torch is None and required:
        import torch  # noqa: F811
    return torch


# ---------------------------------------------------------------------------- checking a header

def _header(raw: bytes) -> tuple[dict, list]:
    """Parse and validate a frame's JSON header: (header, [(dtype name, shape)]).

    Everything here may come from a hostile sender: any malformation is a WireError, never
    another exception (RecursionError for absurd nesting included)."""
    if _values(raw) > MAX_HEADER_VALUES:
        raise WireError(f"header with more than {MAX_HEADER_VALUES} values refused")
    try:
        header = json.loads(raw.decode())
        specs = header["buffers"]
        header["value"]
    except (ValueError, KeyError, TypeError, RecursionError, UnicodeDecodeError) as exc:
        raise WireError(f"bad header: {type(exc).__name__}") from None
    if not isinstance(specs, list) or len(specs) > MAX_ARRAYS:
        raise WireError("bad array list")
    checked = []
    for spec in specs:
        if not (isinstance(spec, list) and len(spec) == 2 and spec[0] in _ALLOWED_DTYPES
                and isinstance(spec[1], list) and len(spec[1]) <= 32
                and all(type(d) is int and 0 <= d <= MAX_MESSAGE_BYTES for d in spec[1])):
            raise WireError("bad array spec")
        if np.dtype(spec[0]).itemsize * math.prod(spec[1]) > MAX_MESSAGE_BYTES:
            raise WireError("array too large")
        checked.append((spec[0], spec[1]))
    return header, checked


def _values(raw: bytes) -> int:
    """What a header is charged for its values (an upper bound: text that holds `,` counts too)."""
    return raw.count(b"[") + raw.count(b"{") + raw.count(b",")
