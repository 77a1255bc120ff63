"""Framing on real socket pairs: frames split anywhere, large frames, own buffers, and
``sendmsg`` of chunk lists with partial writes. Bytes follow the protocol's framing
(int32 size, then the response starting with the int32 correlation id)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from kafka_fast.errors import ProtocolError
from kafka_fast.net.framing import BufferPool, ConnectionClosed, FrameReader, FrameWriter

pytestmark = pytest.mark.timeout(30)


def send_in_background(sock, data: bytes) -> threading.Thread:
    thread = threading.Thread(target=sock.sendall, args=(data,), daemon=True)
    thread.start()
    return thread


def frame(corr: int, body: bytes) -> bytes:
    payload = struct.pack(">i", corr) + body
    return struct.pack(">i", len(payload)) + payload


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    b.setblocking(False)
    yield a, b
    a.close()
    b.close()


def drain(reader: FrameReader, sock) -> list[tuple[int, bytes, bool]]:
    """Read everything available; (corr, body, is_shared_buffer) per frame."""
    out = []
    while True:
        try:
            reader.fill(sock)
        except BlockingIOError:
            return out
        for f in reader.frames():
            shared = f.obj is reader._buf
            out.append((struct.unpack_from(">i", f, 0)[0], bytes(f[4:]), shared))


def test_frames_split_at_every_byte(pair):
    a, b = pair
    frames = [frame(i, bytes([i]) * (i * 7)) for i in range(1, 30)]
    data = b"".join(frames)
    reader = FrameReader(lambda corr: False, BufferPool(), capacity=64)
    got = []
    for i in range(len(data)):
        a.sendall(data[i:i + 1])
        got += drain(reader, b)
    assert [(c, body) for c, body, _ in got] == [(i, bytes([i]) * (i * 7)) for i in range(1, 30)]


def test_many_frames_in_one_read_use_the_shared_buffer(pair):
    a, b = pair
    a.sendall(b"".join(frame(i, b"x" * i) for i in range(100)))
    reader = FrameReader(lambda corr: False, BufferPool())
    got = drain(reader, b)
    assert [(c, body) for c, body, _ in got] == [(i, b"x" * i) for i in range(100)]
    assert all(shared for _, _, shared in got)


def test_owning_frames_get_their_own_buffer(pair):
    a, b = pair
    big = bytes(range(256)) * 4096  # 1 MiB, larger than the shared buffer
    sender = send_in_background(
        a, frame(1, b"small") + frame(2, b"fetch") + frame(3, big) + frame(4, b"after"))
    reader = FrameReader(lambda corr: corr in (2, 3), BufferPool(), capacity=4096)
    got = []
    for _ in range(100_000):
        got += drain(reader, b)
        if len(got) == 4:
            break
    sender.join(5)
    assert [(c, body) for c, body, _ in got] == [(1, b"small"), (2, b"fetch"), (3, big),
                                                 (4, b"after")]
    assert [shared for _, _, shared in got] == [True, False, False, True]


def test_large_shared_frame_grows_the_buffer(pair):
    a, b = pair
    body = b"m" * 300_000
    sender = send_in_background(a, frame(9, body))
    reader = FrameReader(lambda corr: False, BufferPool(), capacity=1024)
    got = []
    for _ in range(100_000):
        got += drain(reader, b)
        if got:
            break
    sender.join(5)
    assert [(c, bd) for c, bd, _ in got] == [(9, body)]


@pytest.mark.parametrize("size", [-1, 0, 3])
def test_invalid_frame_size_raises(pair, size):
    a, b = pair
    a.sendall(struct.pack(">i", size) + b"\0" * 8)
    reader = FrameReader(lambda corr: False, BufferPool())
    reader.fill(b)
    with pytest.raises(ProtocolError, match="invalid response frame size"):
        list(reader.frames())


@pytest.mark.parametrize("limit, size", [(100_000_000, 1 << 30), (1000, 1001)])
def test_frame_above_the_limit_raises_before_allocating(pair, limit, size):
    a, b = pair
    a.sendall(struct.pack(">i", size) + b"\0" * 8)
    reader = FrameReader(lambda corr: False, BufferPool(), max_frame=limit)
    reader.fill(b)
    with pytest.raises(ProtocolError, match=f"response frame of {size} bytes exceeds "
                                            rf"receive.message.max.bytes \({limit}\)"):
        list(reader.frames())


def test_end_of_stream(pair):
    a, b = pair
    a.sendall(frame(1, b"abc")[:6])
    a.close()
    reader = FrameReader(lambda corr: False, BufferPool())
    reader.fill(b)
    assert list(reader.frames()) == []
    with pytest.raises(ConnectionClosed):
        reader.fill(b)


def test_writer_sends_chunk_lists_with_partial_writes(pair):
    a, b = pair
    a.setblocking(False)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    written = []
    writer = FrameWriter(written.append)
    chunks = [bytes([i % 251]) * (i * 97 % 5000 + 1) for i in range(700)]  # > IOV batch
    expected = b"".join(chunks)
    writer.push(chunks[:350], "first")
    writer.push([memoryview(c) for c in chunks[350:]], "second")
    received = bytearray()
    b.setblocking(True)
    b.settimeout(5)
    partial_seen = False
    while True:
        done = writer.flush(a)
        if done:
            break
        partial_seen = True
        received += b.recv(1 << 20)
    while len(received) < len(expected):
        received += b.recv(1 << 20)
    assert bytes(received) == expected
    assert partial_seen
    assert written == ["first", "second"]
    assert not writer.pending


def test_writer_reports_tokens_in_order_and_clear_returns_unsent(pair):
    a, b = pair
    written = []
    writer = FrameWriter(written.append)
    writer.push([b""], "empty")  # nothing to send: complete at once
    assert written == ["empty"]
    writer.push([b"abc"], "t1")
    writer.push([b"def"], "t2")
    assert writer.clear() == ["t1", "t2"]
    assert not writer.pending


def test_buffer_pool_reuses_fitting_buffers():
    pool = BufferPool(max_buffers=2, min_size=1024)
    view = pool.acquire(100_000)
    buf = view.obj
    assert isinstance(buf, bytearray) and len(view) == len(buf) == 100_000
    del view  # no view alive: the pool takes it back
    view = pool.acquire(90_000)
    assert view.obj is buf  # fits (not more than 4x larger)
    del view
    small = pool.acquire(10_000)
    assert small.obj is not buf  # would waste more than 4x
    big = pool.acquire(200_000)
    assert big.obj is not buf and len(big) == 200_000  # too small
    assert len(pool.acquire(500)) == 500  # below min_size: never pooled
    free = pool.free_buffers()
    assert [len(b) for b in free] == [100_000] and free[0] is buf
    assert small.nbytes == 10_000 and big.nbytes == 200_000


def test_buffer_pool_takes_back_a_buffer_only_once_no_view_of_it_is_alive():
    pool = BufferPool(max_buffers=4, min_size=1024)
    frame = pool.acquire(50_000)
    buf = frame.obj
    frame[:5] = b"hello"
    part = frame[1:3]  # a view of a view keeps the export too
    del frame
    other = pool.acquire(50_000)
    assert other.obj is not buf and bytes(part) == b"el"
    del part
    again = pool.acquire(50_000)
    assert again.obj is buf and bytes(again[:5]) == b"hello"  # reused, not zeroed again
    import numpy as np

    arr = np.frombuffer(other[:8], dtype=np.uint8)  # numpy keeps an export too
    other_buf = other.obj
    del other
    assert pool.acquire(50_000).obj is not other_buf
    del arr
    assert pool.acquire(50_000).obj is other_buf
    assert len(again) == 50_000


def test_buffer_pool_keeps_at_most_max_free_bytes_unused():
    pool = BufferPool(max_buffers=8, min_size=1024, max_free_bytes=100_000)
    views = [pool.acquire(size) for size in (30_000, 40_000, 50_000, 200_000)]
    del views
    # 200,000 exceeds the bound alone; of the rest the smallest made way for the larger ones
    assert sorted(len(b) for b in pool.free_buffers()) == [40_000, 50_000]


def test_frames_received_into_pooled_buffers_come_back_intact(pair):
    a, b = pair
    pool = BufferPool(max_buffers=4, min_size=1024)
    reader = FrameReader(lambda corr: True, pool, capacity=4096)
    bodies = [bytes([i]) * 100_000 for i in range(1, 4)]
    held = []
    for i, body in enumerate(bodies):
        a.sendall(frame(i, body))
        got: list[memoryview] = []
        while not got:
            try:
                reader.fill(b)
            except BlockingIOError:
                continue
            got = list(reader.frames())
        held.append(got[0])
        if i == 1:
            first_buf = held.pop(0).obj  # done with: its buffer may now take the third frame
    assert [bytes(f[4:]) for f in held] == bodies[1:]
    assert held[1].obj is first_buf
