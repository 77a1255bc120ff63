"""``encode_batch(into=...)`` writes a batch into a caller's buffer and
``patch_producer_fields(in_place=True)`` stamps it there: the same bytes as the copying calls,
on both engines, and every bound checked."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_fast.net.framing import BufferPool

VALUES = np.arange(300 * 100, dtype=np.uint64).astype(np.uint8).reshape(300, 100)
KEYS = [b"key-%d" % i if i % 7 else None for i in range(300)]
HEADERS = [("h", b"v"), ("n", None)]


@pytest.mark.parametrize("codec", ["none", "lz4", "gzip"])
def test_into_gives_the_bytes_of_a_new_batch(rec, codec):
    args = dict(timestamps=[1_700_000_000_000 + i for i in range(300)], headers=HEADERS,
                compression=codec, base_offset=5)
    expected = rec.encode_batch(VALUES, KEYS, **args)
    assert isinstance(expected, bytes)
    buf = bytearray(b"\xee" * (len(expected) + 100))
    asked: list[int] = []

    def into(n: int) -> bytearray:
        asked.append(n)
        return buf

    got = rec.encode_batch(VALUES, KEYS, into=into, **args)
    assert asked == [len(expected)]
    assert isinstance(got, memoryview) and got.nbytes == len(expected)
    assert bytes(got) == expected
    assert buf[:len(expected)] == expected and buf[len(expected):] == b"\xee" * 100
    (batch,) = rec.decode_batches(got)
    records = batch.records()
    assert [r.key for r in records] == KEYS
    assert [r.value for r in records] == [bytes(row) for row in VALUES]
    assert [r.offset for r in records] == list(range(5, 305))


def test_into_with_rows_picks_those_rows(rec):
    rows = np.array([299, 0, 17], dtype=np.int64)
    expected = rec.encode_batch(VALUES, KEYS, timestamps=3, rows=rows)
    got = rec.encode_batch(VALUES, KEYS, timestamps=3, rows=rows,
                           into=lambda n: memoryview(bytearray(n)))
    assert bytes(got) == expected


def test_into_refuses_short_and_read_only_buffers(rec):
    with pytest.raises(ValueError, match="into\\(\\) returned a buffer of 68 bytes for a "
                                         "batch of 69"):
        rec.encode_batch([b"x"], timestamps=1, into=lambda n: bytearray(n - 1))
    with pytest.raises(TypeError, match="into\\(\\) must return a writable buffer"):
        rec.encode_batch([b"x"], timestamps=1, into=lambda n: bytes(n))
    with pytest.raises(TypeError):
        rec.encode_batch([b"x"], timestamps=1, into=lambda n: 42)


def test_patch_in_place_equals_the_copy(rec):
    batch = rec.encode_batch(VALUES, KEYS, timestamps=9)
    copy = rec.patch_producer_fields(batch, 1234, 5, 77, True)
    buf = bytearray(batch)
    view = memoryview(buf)
    assert rec.patch_producer_fields(view, 1234, 5, 77, True, in_place=True) is view
    assert bytes(buf) == copy
    assert rec.decode_batches(buf)[0].producer_id == 1234
    assert rec.decode_batches(buf)[0].base_sequence == 77


def test_patch_in_place_checks_before_writing(rec):
    batch = rec.encode_batch([b"v"], timestamps=1)
    with pytest.raises(TypeError, match="needs a writable buffer"):
        rec.patch_producer_fields(batch, 1, 1, 1, in_place=True)
    short = bytearray(batch[:-1])
    before = bytes(short)
    with pytest.raises(ValueError, match="does not match"):
        rec.patch_producer_fields(short, 1, 1, 1, in_place=True)
    assert bytes(short) == before


def test_pooled_batches_reuse_released_buffers_only(rec):
    """Batches encoded into a ``BufferPool`` reuse a buffer once its batch is dropped, and
    never one whose batch is still held."""
    pool = BufferPool(min_size=1024)
    big = VALUES[:200]
    first = rec.encode_batch(big, timestamps=1, into=pool.acquire)
    kept = bytes(first)
    second = rec.encode_batch(big[::-1].copy(), timestamps=2, into=pool.acquire)
    assert first.obj is not second.obj  # the first is still held
    assert bytes(first) == kept
    expected_third = rec.encode_batch(big, timestamps=3)
    buffer = second.obj
    del second
    third = rec.encode_batch(big, timestamps=3, into=pool.acquire)
    assert third.obj is buffer  # the released buffer came back
    assert bytes(third) == expected_third
    assert bytes(first) == kept
