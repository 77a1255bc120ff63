"""Non-blocking socket calls: the compiled module and its pure-Python twin behave alike."""

from __future__ import annotations

import importlib
import socket

import pytest

from kafka_fast._impl import FORCED_PURE

IMPLS = ["kafka_fast._pure.sockio"] + ([] if FORCED_PURE else ["kafka_fast._native._sockio"])


@pytest.fixture(params=IMPLS)
def sockio(request):
    return importlib.import_module(request.param)


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    yield a, b
    a.close()
    b.close()


def _drain(sock: socket.socket) -> bytes:
    out = bytearray()
    while True:
        try:
            data = sock.recv(1 << 16)
        except BlockingIOError:
            return bytes(out)
        if not data:
            return bytes(out)
        out += data


def test_send_chunks_sends_buffers_in_order(sockio, pair):
    a, b = pair
    chunks = [b"abc", memoryview(b"0123456789")[2:6], bytearray(b"xyz")]
    assert sockio.send_chunks(a, chunks) == 10
    assert _drain(b) == b"abc2345xyz"
    assert sockio.send_chunks(a, []) == 0


def test_send_chunks_takes_at_most_max_iov(sockio, pair):
    a, b = pair
    chunks = [bytes([i % 251]) for i in range(sockio.MAX_IOV + 10)]
    assert sockio.send_chunks(a, chunks) == sockio.MAX_IOV
    assert _drain(b) == b"".join(chunks[: sockio.MAX_IOV])


def test_send_chunks_full_socket_returns_minus_one(sockio, pair):
    a, b = pair
    block = b"\x5a" * (1 << 16)
    sent = 0
    while True:
        n = sockio.send_chunks(a, [block])
        if n < 0:
            break
        sent += n
    assert sent > 0
    received = bytearray()
    while len(received) < sent:
        received += _drain(b)
    assert received == b"\x5a" * sent


def test_recv_into_range_eof_and_nothing_available(sockio, pair):
    a, b = pair
    buf = bytearray(b"." * 12)
    assert sockio.recv_into(b, buf, 0, 12) == -1
    a.sendall(b"hello")
    assert sockio.recv_into(b, buf, 4, 7) == 3
    assert buf == b"....hel....."
    assert sockio.recv_into(b, memoryview(buf), 7, 12) == 2
    assert buf == b"....hello..."
    a.close()
    assert sockio.recv_into(b, buf, 0, 12) == 0


@pytest.mark.parametrize("start, end", [(-1, 4), (5, 4), (0, 13)])
def test_recv_into_rejects_ranges_outside_the_buffer(sockio, pair, start, end):
    _, b = pair
    with pytest.raises(ValueError, match="outside a buffer of 12 bytes"):
        sockio.recv_into(b, bytearray(12), start, end)


def test_recv_into_needs_a_writable_buffer(sockio, pair):
    _, b = pair
    with pytest.raises((TypeError, BufferError)):
        sockio.recv_into(b, b"read-only", 0, 4)


def test_socket_errors_raise_oserror(sockio):
    a, b = socket.socketpair()
    b.close()
    # Peer gone: sending fails with EPIPE (no SIGPIPE: MSG_NOSIGNAL).
    with pytest.raises(OSError) as info:
        sockio.send_chunks(a, [b"x"])
    assert info.value.errno in (32, 104)  # EPIPE, ECONNRESET
    a.close()
    with pytest.raises(OSError):
        sockio.recv_into(a, bytearray(4), 0, 4)


@pytest.mark.skipif(FORCED_PURE, reason="the compiled module is not used in pure mode")
def test_compiled_calls_keep_the_interpreter_lock(pair):
    """A call that gave the GIL up would wait about a second to get it back from a busy
    thread (tests/harness/gil.py): ten calls stay far below one such wait."""
    from harness.gil import seconds_beside_a_busy_thread

    from kafka_fast._native import _sockio

    a, b = pair

    def round_trip() -> None:
        assert _sockio.send_chunks(a, [b"x"]) == 1
        assert _sockio.recv_into(b, bytearray(1), 0, 1) == 1

    elapsed = seconds_beside_a_busy_thread(round_trip, 5)
    assert elapsed < 0.9, f"10 calls took {elapsed:.1f}s: the interpreter lock was given up"


def test_large_calls_give_the_lock_up_when_asked(sockio, pair):
    """With ``nogil_bytes``, a send of at least that many bytes and a receive into a range
    that large run without the interpreter lock (``released_calls`` counts them); smaller
    calls keep it. The bytes arrive intact either way."""
    a, b = pair
    block = bytes(range(256)) * 64  # 16 KiB
    received = bytearray(len(block))
    before = sockio.released_calls()
    assert sockio.send_chunks(a, [block[:8192], block[8192:]], len(block)) == len(block)
    assert sockio.released_calls() == before + 1
    got = 0
    while got < len(block):  # each receive asks for the rest: at least nogil_bytes
        n = sockio.recv_into(b, received, got, len(block), len(block) - got)
        assert n > 0
        got += n
    assert received == block
    released = sockio.released_calls()
    assert released >= before + 2
    assert sockio.send_chunks(a, [block], len(block) + 1) == len(block)
    got = 0
    while got < len(block):
        got += sockio.recv_into(b, received, got, len(block), len(block) + 1)
    assert sockio.send_chunks(a, [block]) == len(block)  # no nogil_bytes: keep the lock
    assert sockio.released_calls() == released
    assert _drain(b) == block


@pytest.mark.skipif(FORCED_PURE, reason="the compiled module is not used in pure mode")
def test_small_calls_keep_the_lock_when_asked_for_large_ones(pair):
    """Calls below ``nogil_bytes`` keep the lock: beside a busy thread, five round trips
    stay far below one wait for it (tests/harness/gil.py)."""
    from harness.gil import seconds_beside_a_busy_thread

    from kafka_fast._native import _sockio

    a, b = pair
    block = b"\x33" * 4096
    received = bytearray(len(block))

    def small() -> None:
        assert _sockio.send_chunks(a, [block], len(block) + 1) == len(block)
        got = 0
        while got < len(block):
            got += _sockio.recv_into(b, received, got, len(block), len(block) + 1)

    assert seconds_beside_a_busy_thread(small, 5) < 0.9
    assert received == block
