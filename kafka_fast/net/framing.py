"""Size-prefixed Kafka framing on non-blocking sockets.

Reading: bytes are received into one reusable buffer per connection and complete frames are
handed out as memoryviews of it, valid only until the next ``fill()``. A frame whose decoded
response keeps views of its bytes (Fetch records) gets a buffer of its own from a
``BufferPool`` instead: large ones are received straight into it. Such a buffer belongs to the
response until no view of it is alive; the pool then takes it back by itself.

Writing: queued chunks (bytes-like objects, never joined) go out with one ``sendmsg``;
a partial write leaves the rest queued. TLS sockets cannot ``sendmsg``; there small chunks
are gathered into records of up to 64 KiB.

On plain sockets both directions use ``kafka_fast._native._sockio``, whose non-blocking calls
keep the interpreter lock: the I/O thread does not wait a switch interval to get it back after
every system call while an application thread is busy. ``fill`` and ``flush`` take the size
from which a call runs without the lock instead (``kafka_fast.net.lock_policy``).
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from .._impl import load
from ..errors import ProtocolError

_sockio, _ = load("_sockio", "sockio")
_send_chunks = _sockio.send_chunks
_recv_into = _sockio.recv_into

_SIZE = struct.Struct(">i")
#: Largest response frame accepted unless told otherwise (``receive.message.max.bytes``).
MAX_FRAME = 100_000_000
#: Bytes read per ``recv_into`` into the shared buffer.
READ_CAPACITY = 256 * 1024
#: Frames larger than this that do not need their own buffer grow the shared one up to here.
SHARED_GROWTH_LIMIT = 8 * 1024 * 1024
#: Most chunks passed to one ``sendmsg`` (IOV_MAX is 1024 on Linux).
MAX_IOV = _sockio.MAX_IOV
_TLS_RECORD = 64 * 1024


class ConnectionClosed(Exception):
    """The peer closed the connection."""


class BufferPool:
    """Reusable buffers for responses that own their bytes (thread-safe).

    ``acquire(n)`` returns a writable memoryview of a ``bytearray`` of at least ``n`` bytes: a
    free one that fits (and is not more than 4x larger), or a new one. The buffer comes back
    by itself once no view of it is alive any more: the pool remembers the last
    ``max_buffers`` it lent and takes back those without exports (a bytearray refuses to be
    resized while a view of it exists); at most ``max_free_bytes`` wait unused. A reused
    buffer is neither zeroed nor faulted in again: a fresh multi-megabyte one costs the kernel
    a page fault and a page clear per 4 KiB, and ``bytearray(n)`` a memset.
    """

    def __init__(self, max_buffers: int = 16, min_size: int = 64 * 1024,
                 max_free_bytes: int = 64 << 20) -> None:
        self._free: list[bytearray] = []
        self._lent: deque[bytearray] = deque(maxlen=max_buffers)
        self._lock = threading.Lock()
        self.max_buffers = max_buffers
        self.min_size = min_size
        self.max_free_bytes = max_free_bytes

    def acquire(self, size: int) -> memoryview:
        if size < self.min_size:
            return memoryview(bytearray(size))
        with self._lock:
            self._reclaim()
            best = -1
            for i, buf in enumerate(self._free):
                if size <= len(buf) <= 4 * size and (best < 0 or len(buf) < len(self._free[best])):
                    best = i
            buf = self._free.pop(best) if best >= 0 else bytearray(size)
            self._lent.append(buf)
            return memoryview(buf)  # exported before the lock is let go

    def free_buffers(self) -> list[bytearray]:
        """The buffers waiting to be reused (a copy of the list)."""
        with self._lock:
            self._reclaim()
            return list(self._free)

    def _reclaim(self) -> None:
        """Move lent buffers that no view uses any more to the free list."""
        for _ in range(len(self._lent)):
            buf = self._lent.popleft()
            if _exported(buf):
                self._lent.append(buf)
                continue
            if len(buf) > self.max_free_bytes:
                continue
            self._free.sort(key=len)
            while self._free and (len(self._free) >= self.max_buffers or sum(
                    map(len, self._free)) + len(buf) > self.max_free_bytes):
                self._free.pop(0)  # the smallest make way (memory stays bounded)
            self._free.append(buf)


def _exported(buf: bytearray) -> bool:
    """True while a memoryview (or other buffer export) of ``buf`` is alive: a bytearray with
    exports cannot be resized. Shrinking by one byte and growing back moves no memory."""
    try:
        last = buf.pop()
    except BufferError:
        return True
    buf.append(last)
    return False


class FrameReader:
    """Turns received bytes into response frames (without the 4-byte size prefix).

    ``owns_buffer(correlation_id)`` says whether the frame for that request must get a buffer
    of its own (its decoded response keeps views of the bytes).
    """

    def __init__(self, owns_buffer: Callable[[int], bool], pool: BufferPool,
                 capacity: int = READ_CAPACITY, max_frame: int = MAX_FRAME) -> None:
        self._owns_buffer = owns_buffer
        self._pool = pool
        self._max_frame = max_frame
        self._buf = bytearray(capacity)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._big: memoryview | None = None  # frame being received into its own buffer
        self._big_filled = 0
        self._big_size = 0

    def fill(self, sock: socket.socket, nogil_bytes: int = -1) -> int:
        """One receive; returns the bytes read. Raises ``BlockingIOError``/``ssl``
        want-errors when nothing is available and ``ConnectionClosed`` at end of stream.
        A receive into a range of at least ``nogil_bytes`` (if >= 0) runs without the
        interpreter lock."""
        if self._big is not None:
            n = self._receive(sock, self._big, self._big_filled, self._big_size, nogil_bytes)
            self._big_filled += n
            return n
        if self._start == self._end:
            self._start = self._end = 0
        elif self._end == len(self._buf):
            self._compact()
        n = self._receive(sock, self._buf, self._end, len(self._buf), nogil_bytes)
        self._end += n
        return n

    @staticmethod
    def _receive(sock: socket.socket, buf, start: int, end: int, nogil_bytes: int) -> int:
        if isinstance(sock, ssl.SSLSocket):
            n = sock.recv_into(memoryview(buf)[start:end])
        else:
            n = _recv_into(sock, buf, start, end, nogil_bytes)
            if n < 0:
                raise BlockingIOError
        if not n:
            raise ConnectionClosed("connection closed by broker")
        return n

    def _compact(self) -> None:
        remaining = self._end - self._start
        self._buf[0:remaining] = self._buf[self._start:self._end]
        self._start, self._end = 0, remaining

    def _frame_size(self, at: int) -> int:
        size = _SIZE.unpack_from(self._buf, at)[0]
        if size > self._max_frame:
            raise ProtocolError(
                f"response frame of {size} bytes exceeds receive.message.max.bytes "
                f"({self._max_frame})")
        if size < 4:
            raise ProtocolError(f"invalid response frame size {size}")
        return size

    def frames(self) -> Iterator[memoryview]:
        """Complete frames received so far (each starts with the correlation id)."""
        if self._big is not None:
            if self._big_filled < self._big_size:
                return
            frame = self._big[:self._big_size]
            self._big = None
            yield frame
        while True:
            avail = self._end - self._start
            if avail < 4:
                return
            size = self._frame_size(self._start)
            body = self._start + 4
            if avail - 4 >= size:
                self._start = body + size
                corr = _SIZE.unpack_from(self._buf, body)[0]
                if self._owns_buffer(corr):
                    own = self._pool.acquire(size)
                    own[:size] = self._view[body:body + size]
                    yield own[:size]
                else:
                    yield self._view[body:body + size]
                continue
            # Partial frame: decide where the rest goes.
            owns = avail >= 8 and self._owns_buffer(_SIZE.unpack_from(self._buf, body)[0])
            if owns or size > SHARED_GROWTH_LIMIT:
                own = self._pool.acquire(size)
                have = avail - 4
                own[:have] = self._view[body:self._end]
                self._big = own
                self._big_filled = have
                self._big_size = size
                self._start = self._end = 0
                return
            if size + 4 > len(self._buf):
                self._grow(size + 4)
            elif self._start + size + 4 > len(self._buf):
                self._compact()
            return

    def _grow(self, needed: int) -> None:
        capacity = len(self._buf)
        while capacity < needed:
            capacity *= 2
        new = bytearray(capacity)
        remaining = self._end - self._start
        new[:remaining] = self._view[self._start:self._end]
        self._buf = new
        self._view = memoryview(new)
        self._start, self._end = 0, remaining


class FrameWriter:
    """Queue of outgoing chunks; ``written(token)`` is called once a token's chunks are sent."""

    def __init__(self, written: Callable[[Any], None]) -> None:
        self._chunks: deque[memoryview] = deque()
        self._queued = 0  # total bytes ever queued
        self._sent = 0  # total bytes ever sent
        self._marks: deque[tuple[int, object]] = deque()
        self._written = written

    @property
    def pending(self) -> bool:
        return bool(self._chunks)

    def push(self, chunks, token: object = None) -> None:
        """Queue ``chunks``; with a ``token``, ``written(token)`` runs once they are sent."""
        for chunk in chunks:
            view = chunk if isinstance(chunk, memoryview) else memoryview(chunk)
            if view.format != "B" or view.ndim != 1:
                view = view.cast("B")
            n = view.nbytes
            if n:
                self._chunks.append(view)
                self._queued += n
        if token is not None:
            self._marks.append((self._queued, token))
            if self._queued == self._sent:
                self._run_marks()

    def flush(self, sock: socket.socket, nogil_bytes: int = -1) -> bool:
        """Send as much as the socket takes; True once nothing is left queued. A ``sendmsg``
        of at least ``nogil_bytes`` (if >= 0) runs without the interpreter lock."""
        chunks = self._chunks
        if isinstance(sock, ssl.SSLSocket):
            return self._flush_tls(sock)
        while chunks:
            n = _send_chunks(sock, chunks, nogil_bytes)
            if n < 0:
                return False
            self._consume(n)
            if self._marks:
                self._run_marks()
        return True

    def _flush_tls(self, sock: ssl.SSLSocket) -> bool:
        chunks = self._chunks
        while chunks:
            try:
                n = sock.send(self._tls_record())
            except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError,
                    ssl.SSLWantReadError):
                return False
            self._consume(n)
            if self._marks:
                self._run_marks()
        return True

    def _tls_record(self):
        chunks = self._chunks
        first = chunks[0]
        if first.nbytes >= _TLS_RECORD or len(chunks) == 1:
            return first
        parts = []
        total = 0
        for chunk in chunks:
            if total + chunk.nbytes > _TLS_RECORD and parts:
                break
            parts.append(chunk)
            total += chunk.nbytes
        return b"".join(parts)

    def _consume(self, n: int) -> None:
        self._sent += n
        chunks = self._chunks
        while n:
            head = chunks[0]
            size = head.nbytes
            if n >= size:
                chunks.popleft()
                n -= size
            else:
                chunks[0] = head[n:]
                n = 0

    def _run_marks(self) -> None:
        marks = self._marks
        while marks and marks[0][0] <= self._sent:
            self._written(marks.popleft()[1])

    def clear(self) -> list:
        """Drop everything queued; returns the tokens whose chunks were not all sent."""
        self._chunks.clear()
        pending = [token for _, token in self._marks]
        self._marks.clear()
        self._queued = self._sent = 0
        return pending
