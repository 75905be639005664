"""Frames on sockets: the wire's data (run/wire.py) sent and read whole, within a deadline.

A frame is an 8-byte big-endian header length, the JSON header, then the array buffers back to
back. Reading checks the header (wire._header) before it reads the body, so a hostile sender's
frame costs the receiver at most the wire's limits.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from autograder.run.wire import MAX_HEADER_BYTES, MAX_MESSAGE_BYTES, WireError, _header


def send(sock, frame: bytes) -> None:
    sock.sendall(frame)


def recv(sock, deadline: float | None = None, fds: list | None = None) -> bytearray:
    """Read one frame from a socket. With `deadline` (time.monotonic()), the whole frame must
    arrive by then, however slowly it trickles in (raises socket.timeout). With `fds` (a list,
    the worker's side only), file descriptors sent with the frame are appended to it."""
    if fds is None:
        head = _recv_exact(sock, 8, deadline)
    else:
        import socket
        head, got, _flags, _addr = socket.recv_fds(sock, 8, 4)
        fds.extend(got)
        if not head:
            raise EOFError("the other side closed the connection")
        head += _recv_exact(sock, 8 - len(head), deadline)
    (n,) = struct.unpack(">Q", head)
    if n > MAX_HEADER_BYTES:
        raise WireError(f"header of {n} bytes refused")
    header = _recv_exact(sock, n, deadline)
    _, specs = _header(header)
    total = sum(np.dtype(d).itemsize * math.prod(s) for d, s in specs)
    if total > MAX_MESSAGE_BYTES:
        raise WireError(f"message of {total} bytes refused")
    frame = bytearray(8 + n + total)   # one buffer: the body is read into it, never copied again
    frame[:8], frame[8:8 + n] = head, header
    _recv_into(sock, memoryview(frame)[8 + n:], deadline)
    return frame


def _recv_into(sock, view: memoryview, deadline: float | None = None) -> None:
    import socket
    import time
    while len(view):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("deadline passed")
            sock.settimeout(left)
        got = sock.recv_into(view, min(len(view), 1 << 20))
        if not got:
            raise EOFError("the other side closed the connection")
        view = view[got:]


def _recv_exact(sock, n: int, deadline: float | None = None) -> bytes:
    import socket
    import time
    chunks = []
    while n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("deadline passed")
            sock.settimeout(left)
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


MAX_ASKS = 4096         # questions answered per request (a stand-in's, run/substitute.py); then {}
ASK_ALLOWANCE = 0.005   # s added to the deadline per question answered, besides CHILD_SIDE x the grader's side
CHILD_SIDE = 4          # the child's side of an exchange took up to ~3x the grader's (measured, load 14 on 2 cores)


def recv_reply(sock, deadline: float, on_ask=None, allowance: float = math.inf) -> tuple[bytearray, float]:
    """(the reply frame to the request just sent, seconds added to `deadline`). Before it, the child
    may ask questions ({"ask": ...} frames: a stand-in for a helper, run/substitute.py, Asks):
    `on_ask(question)` answers each with data, up to MAX_ASKS, and each exchange's time is added to
    the deadline: the grader's side (reading the question, answering, sending the answer), and
    CHILD_SIDE times that for the child's (sending it, reading the answer: the same work mirrored, but
    slower in a confined child), plus ASK_ALLOWANCE. Bounded: MAX_ASKS exchanges per request, and no
    more than `allowance` seconds added in all (what is left of the submission's own for questions:
    isolate/submission.py, Budget). Without `on_ask`, past MAX_ASKS or once `allowance` is used up,
    the answer is {} (the student's own answer stands) and no time is added; so is an answer past
    the wire's limits, which the child would refuse."""
    import time
    frame, asked, credit = recv(sock, deadline), 0, 0.0
    while True:
        answering = time.monotonic()
        question = _question(frame)
        if question is None:
            return frame, credit
        asked += 1
        answered = on_ask is not None and asked <= MAX_ASKS and credit < allowance
        send(sock, _answer_frame(on_ask(question) if answered else {}))
        if answered:
            extra = min((1 + CHILD_SIDE) * (time.monotonic() - answering) + ASK_ALLOWANCE, allowance - credit)
            credit, deadline = credit + extra, deadline + extra
        frame = recv(sock, deadline)


def _answer_frame(answer) -> bytes:
    """`answer` as a frame, or {} where it is past the limits the child reads (wire.recv)."""
    from autograder.run import wire
    try:
        return wire.encode(answer, bounded=True)
    except wire.TooLarge:
        return wire.encode({})


def _question(frame) -> dict | None:
    """The child's question in `frame` ({"ask": ...}, sent in the middle of a request), else None
    (the frame is the reply, read as such by the caller). A frame that cannot be read is a reply."""
    from autograder.run import bounds, wire
    if b'[["ask", ' not in bytes(frame[8:64]):       # a reply starts [["ok", ...: not decoded twice
        return None
    try:
        message = wire.decode(frame, objects=lambda n, t: wire.Handle(n, t), max_text=bounds.TEXT)
    except Exception:     # noqa: BLE001 - untrusted bytes: the caller reads them as the reply
        return None
    if isinstance(message, dict) and set(message) == {"ask"} and isinstance(message["ask"], dict):
        return message["ask"]
    return None
