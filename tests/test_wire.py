"""The wire format: data round-trips; nothing in a frame can make the grader run code."""
from __future__ import annotations

import struct

import numpy as np
import pytest
import torch

from autograder.run import frames, wire


def roundtrip(value):
    return wire.decode(wire.encode(value))


def test_data_round_trips():
    value = {"a": [1, 2.5, None, True, "s"], ("t", 1): (np.arange(6).reshape(2, 3), {1, 2}),
             "nan": float("nan"), "inf": float("-inf")}
    back = roundtrip(value)
    np.testing.assert_array_equal(back[("t", 1)][0], np.arange(6).reshape(2, 3))
    assert back[("t", 1)][1] == {1, 2} and back["a"] == [1, 2.5, None, True, "s"]
    assert np.isnan(back["nan"]) and back["inf"] == float("-inf")


def test_tensors_come_back_as_tensors_and_arrays_as_arrays():
    t = torch.randn(2, 3, requires_grad=True)
    back = roundtrip([t, np.float32(2.0), t.numpy(force=True)])
    assert isinstance(back[0], torch.Tensor) and torch.equal(back[0], t.detach())
    assert isinstance(back[2], np.ndarray) and back[1] == 2.0


def test_objects_are_opaque_without_a_handle_registry():
    class Liar:
        def __eq__(self, other):
            return True

        def __array__(self, *a, **k):
            raise RuntimeError("boom")
    back = roundtrip({"x": Liar(), "arr": np.array([object()], dtype=object)})
    assert isinstance(back["x"], wire.Opaque) and isinstance(back["arr"], wire.Opaque)


def test_malformed_frames_are_refused():
    for frame in (b"", b"\x00" * 8, struct.pack(">Q", 99) + b"{}"):
        with pytest.raises(wire.WireError):
            wire.decode(frame)
    header = b'{"value": {"$array": 0, "kind": "numpy"}, "buffers": [["object", [1]]]}'
    with pytest.raises(wire.WireError):
        wire.decode(struct.pack(">Q", len(header)) + header + b"\x00" * 8)
    header = b'{"value": {"$array": 0, "kind": "numpy"}, "buffers": [["float64", [1000]]]}'
    with pytest.raises(wire.WireError):
        wire.decode(struct.pack(">Q", len(header)) + header + b"\x00" * 8)


def test_class_sources_are_only_built_where_allowed():
    frame = wire.encode(wire.ClassSource("C", "class C: pass"))
    with pytest.raises(wire.WireError):
        wire.decode(frame)


def _trickle(sock, frame, pause):
    import threading
    import time

    def run():
        for byte in frame:
            try:
                sock.send(bytes([byte]))
            except OSError:
                return
            time.sleep(pause)
    threading.Thread(target=run, daemon=True).start()


@pytest.mark.slow
def test_a_trickled_frame_is_cut_at_the_deadline_not_at_each_byte():
    """1 byte every 0.1 s: each recv finishes well inside a per-call timeout, so only a deadline
    for the whole frame stops it (the control shows a per-call timeout alone does not)."""
    import socket
    import time
    header = b'{"value": 1, "buffers": []}'
    frame = struct.pack(">Q", len(header)) + header           # 35 bytes: 3.5 s at this pace
    ours, theirs = socket.socketpair()
    _trickle(theirs, frame, 0.1)
    started = time.monotonic()
    with pytest.raises(socket.timeout):
        frames.recv(ours, deadline=started + 1.0)
    assert time.monotonic() - started < 1.5
    ours2, theirs2 = socket.socketpair()
    _trickle(theirs2, frame, 0.1)
    ours2.settimeout(1.0)                                      # the old way: a timeout per recv
    started = time.monotonic()
    assert wire.decode(frames.recv(ours2)) == 1
    assert time.monotonic() - started > 3.0


@pytest.mark.parametrize("header", [b"[" * 100_000 + b"]" * 100_000,
                                    b'{"value": null, "buffers": [["float64", [4294967296, 4294967296]]]}',
                                    b'{"value": {"$array": 3}, "buffers": []}',
                                    b'{"value": null, "buffers": [["object", [2]]]}',
                                    b'\xff\xfe'])
def test_forged_frames_are_wire_errors_never_other_exceptions(header):
    frame = struct.pack(">Q", len(header)) + header
    with pytest.raises(wire.WireError):
        wire.decode(frame)
    import socket
    ours, theirs = socket.socketpair()
    theirs.sendall(frame)
    theirs.close()
    try:   # framing either refuses it at once or delivers it whole (and decode refuses it)
        wire.decode(frames.recv(ours, deadline=__import__("time").monotonic() + 5))
    except (wire.WireError, EOFError):
        pass
    else:
        pytest.fail("a forged frame was accepted")


# ------------------------------------------------- a module's handle carries its parameters' shapes

def test_a_modules_handle_carries_the_shapes_the_parameters_request_would_give():
    from autograder.run.executor import Executor
    executor = Executor({"torch": torch})
    executor.handle(wire.encode({"op": "exec", "args": {"label": "a", "source": (
        "class Twice(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.inner = torch.nn.Linear(3, 2)\n"
        "def make():\n"
        "    return Twice()\n")}}))
    reply = wire.decode(executor.handle(wire.encode({"op": "call", "args": {"target": ["name", "make"]}})))
    handle = reply["value"]["result"]
    assert isinstance(handle, wire.Handle) and handle.module
    asked = wire.decode(executor.handle(wire.encode({"op": "parameters", "args": {"handle": handle.number}})))
    assert handle.parameters == asked["value"] == {"inner.weight": (2, 3), "inner.bias": (2,)}
    # what is not a module carries none
    executor.handle(wire.encode({"op": "exec", "args": {"label": "b", "source": "def thing():\n    return object()\n"}}))
    other = wire.decode(executor.handle(wire.encode({"op": "call", "args": {"target": ["name", "thing"]}})))
    assert other["value"]["result"].parameters is None and not other["value"]["result"].module


@pytest.mark.parametrize("forged", [{"w": [2]}, [["w", [-1]]], [["w", [2.5]]], [[1, [2]]], [["w", [2], 3]], "w"])
def test_forged_shapes_on_a_handle_are_dropped_not_trusted(forged):
    header = {"value": {"$handle": 1, "type": "M", "parameters": forged}, "buffers": []}
    raw = wire.json.dumps(header).encode()
    handle = wire.decode(struct.pack(">Q", len(raw)) + raw)
    assert isinstance(handle, wire.Handle) and handle.parameters is None


def test_shapes_are_asked_again_once_anything_else_was_asked():
    """RemoteObject.parameters answers from the shapes it has only while no other request was sent
    to the student's process since (which could have changed the module)."""
    from autograder.grading.student import LocalSubmission, Student

    class Counting(LocalSubmission):
        def __init__(self, namespace):
            super().__init__(namespace)
            self.ops = []

        def request(self, op, **args):
            self.ops.append(op)
            return super().request(op, **args)

    ns = {"torch": torch}
    exec("class Grows(torch.nn.Module):\n"
         "    def __init__(self):\n"
         "        super().__init__()\n"
         "        self.a = torch.nn.Linear(2, 2)\n"
         "    def forward(self, x):\n"
         "        self.b = torch.nn.Linear(2, 2)   # a module that changes when called\n"
         "        return x\n", ns)
    sub = Counting(ns)
    module = Student(sub).Grows()
    assert module.parameters() == module.parameters() == {"a.weight": (2, 2), "a.bias": (2,)}
    assert sub.ops == ["call"]                          # both from the handle
    module(torch.ones(1, 2))
    assert set(module.parameters()) == {"a.weight", "a.bias", "b.weight", "b.bias"}
    assert sub.ops == ["call", "call", "parameters"]
    module.load_parameters({"a.bias": torch.zeros(2)}, mode=False)   # loading and eval mode: one request
    assert sub.ops[-1] == "load_parameters" and len(sub.ops) == 4
    assert ns["Grows"] is not None and not sub.executor.handles[module._number].training
    module.load_parameters({"a.bias": torch.zeros(2)}, mode=True)
    assert sub.executor.handles[module._number].training


def test_a_module_with_empty_projections_fails_its_checks_not_the_grader():
    """nn.Linear(0, 0) is a real module (and a forged handle can report shapes of 0): the parameter
    check says what is wrong, it never divides by zero (a red-team finding)."""
    from autograder.grading.compare import Mismatch
    from autograder.grading.parameters import linear_shapes, load_lenient, random_parameters

    class Empty:
        def parameters(self):
            return {"w_q.weight": (0, 0), "w_q.bias": (0,), "w_k.weight": (8, 8), "w_k.bias": (8,)}

        def load_parameters(self, values, strict=True, mode=None):
            raise AssertionError("nothing may be loaded into a module of the wrong shape")

    shapes = linear_shapes(["w_q", "w_k"], 8, 8)
    with pytest.raises(Mismatch, match="w_q.weight has shape"):
        load_lenient(Empty(), shapes, random_parameters(np.random.default_rng(0), shapes), "MultiHeadAttention(8, 2)")


def _accepted(frame: bytes) -> bool:
    """Whether the grader's recv() would read `frame` (its header and array limits)."""
    import socket
    import threading
    ours, theirs = socket.socketpair()
    sender = threading.Thread(target=lambda: _send_until_closed(theirs, frame))
    sender.start()
    try:
        frames.recv(ours, deadline=None)
        return True
    except wire.WireError:
        return False
    finally:
        ours.close()
        sender.join()
        theirs.close()


def _send_until_closed(sock, frame: bytes) -> None:
    try:
        sock.sendall(frame)
    except OSError:   # the receiver refused the frame and closed its end
        pass


@pytest.mark.parametrize("value", [
    pytest.param(lambda: list(range(wire.MAX_HEADER_VALUES)), id="values"),
    pytest.param(lambda: "," * wire.MAX_HEADER_VALUES, id="commas in a text"),
    pytest.param(lambda: "x" * (wire.MAX_HEADER_BYTES + 1), id="header bytes"),
    pytest.param(lambda: [np.zeros(1)] * (wire.MAX_ARRAYS + 1), id="arrays"),
    pytest.param(lambda: [np.zeros(2**20, np.uint8)] * 65, id="array bytes"),
])
def test_a_reply_the_grader_would_refuse_is_refused_by_its_sender(value):
    """A bounded encode (the worker's replies) raises TooLarge for exactly what recv() refuses,
    so the worker can say so instead of sending a frame the grader drops as unreadable."""
    value = value()
    assert not _accepted(wire.encode(value))
    with pytest.raises(wire.TooLarge, match="the limit is"):
        wire.encode(value, bounded=True)


@pytest.mark.parametrize("value", [
    pytest.param(lambda: list(range(wire.MAX_HEADER_VALUES // 2)), id="values"),
    pytest.param(lambda: [np.zeros(1)] * wire.MAX_ARRAYS, id="arrays"),
    pytest.param(lambda: np.zeros(wire.MAX_MESSAGE_BYTES, np.uint8), id="array bytes"),
])
def test_a_reply_within_the_limits_is_sent_as_it_is(value):
    value = value()
    frame = wire.encode(value, bounded=True)
    assert frame == wire.encode(value) and _accepted(frame)
