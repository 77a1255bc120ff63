"""Pure-Python twin of ``kafka_fast._native._sockio``: the same calls through ``socket``.

These release the interpreter lock around each system call, as every Python socket method does
(``nogil_bytes`` is accepted and has nothing left to decide).
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Iterable

NATIVE = False
#: Most buffers passed to one ``send_chunks`` call (IOV_MAX is 1024 on Linux).
MAX_IOV = 512


_released = 0


def released_calls() -> int:
    """How many calls so far moved at least their ``nogil_bytes`` (the calls the compiled
    module makes without the interpreter lock; here every call releases it)."""
    return _released


def send_chunks(sock: socket.socket, chunks: Iterable, nogil_bytes: int = -1) -> int:
    """Send the leading buffers of ``chunks`` on ``sock`` with one ``sendmsg``; at most
    ``MAX_IOV`` of them. Returns the bytes sent, or -1 when the socket takes nothing now."""
    global _released
    buffers = list(itertools.islice(chunks, MAX_IOV))
    if not buffers:
        return 0
    if 0 <= nogil_bytes <= sum(memoryview(b).nbytes for b in buffers):
        _released += 1
    try:
        return sock.sendmsg(buffers, [], socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
    except (BlockingIOError, InterruptedError):
        return -1


def recv_into(sock: socket.socket, buffer, start: int, end: int, nogil_bytes: int = -1) -> int:
    """Receive from ``sock`` into ``buffer[start:end]``. Returns the bytes read, 0 at end of
    stream, or -1 when nothing is available."""
    global _released
    view = memoryview(buffer).cast("B")
    if start < 0 or end < start or end > view.nbytes:
        raise ValueError(f"receive range {start}:{end} outside a buffer of {view.nbytes} bytes")
    if 0 <= nogil_bytes <= end - start:
        _released += 1
    try:
        return sock.recv_into(view[start:end], 0, socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return -1
