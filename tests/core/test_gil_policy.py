"""Finishing and checking ordinary batches keeps the interpreter lock (checksums of a few MB
take well under a millisecond; giving the lock up would cost a switch interval)."""

from __future__ import annotations

import importlib

import pytest
from harness.gil import seconds_beside_a_busy_thread

from kafka_fast._pure import records as pure_records
from kafka_fast.errors import CorruptRecordError
from kafka_fast.records import NATIVE, RecordBatchBuilder, decode_batches

pytestmark = pytest.mark.skipif(not NATIVE, reason="the compiled engine is not used")


def _builder() -> RecordBatchBuilder:
    b = RecordBatchBuilder(batch_size=2_000_000)
    for i in range(10_000):
        assert b.append(b"v" * 100, key=b"k%d" % i, timestamp=1_700_000_000_000)
    return b


def test_build_keeps_the_interpreter_lock():
    builders = [_builder() for _ in range(5)]
    built = []
    elapsed = seconds_beside_a_busy_thread(lambda: built.append(builders.pop().build()), 5)
    assert elapsed < 0.9, f"5 builds took {elapsed:.1f}s: the interpreter lock was given up"
    assert len(built) == 5 and all(len(b) > 1_000_000 for b in built)


def test_crc_check_keeps_the_interpreter_lock():
    data = _builder().build()
    found = []
    elapsed = seconds_beside_a_busy_thread(
        lambda: found.append(decode_batches(data, verify_crc=True)[0].last_offset_delta + 1), 5)
    assert elapsed < 0.9, f"5 checks took {elapsed:.1f}s: the interpreter lock was given up"
    assert found == [10_000] * 5


def _many_batches(count: int) -> bytes:
    """``count`` separate batches of about 1.1 MB each, one after the other."""
    return b"".join(_builder().build() for _ in range(count))


@pytest.mark.parametrize("name", ["kafka_fast._native._records", "kafka_fast._pure.records"],
                         ids=["compiled", "pure"])
def test_crc_check_of_many_batches_in_one_pass_without_the_lock(name):
    """Batches that add up to 8 MiB are checked in one pass without the lock (counted by
    ``nogil_crc_passes``); below that, or without a CRC check, the lock is kept."""
    impl = importlib.import_module(name)
    data = _many_batches(8)
    assert len(data) >= 8 << 20
    before = impl.nogil_crc_passes()
    assert [b.last_offset_delta + 1 for b in impl.decode_batches(data)] == [10_000] * 8
    assert impl.nogil_crc_passes() == before + 1
    impl.decode_batches(data, verify_crc=False)
    impl.decode_batches(data[:len(data) // 2])
    assert impl.nogil_crc_passes() == before + 1


@pytest.mark.parametrize("bad", [0, 3, 7])
@pytest.mark.parametrize("decode", [decode_batches, pure_records.decode_batches],
                         ids=["compiled", "pure"])
def test_crc_mismatch_after_a_checked_run_is_reported_at_its_batch(bad, decode):
    data = bytearray(_many_batches(8))
    size = len(data) // 8
    data[bad * size + size // 2] ^= 0x01  # inside a record of batch ``bad``
    with pytest.raises(CorruptRecordError, match="CRC mismatch") as info:
        decode(bytes(data))
    assert info.value.position == bad * size
    assert [b.last_offset_delta for b in decode(bytes(data), verify_crc=False)] == [9_999] * 8


def test_truncated_last_batch_after_a_checked_run():
    data = _many_batches(8)
    batches = decode_batches(data[:-100])
    assert len(batches) == 7 and all(b.last_offset_delta == 9_999 for b in batches)
    with pytest.raises(CorruptRecordError, match="truncated batch"):
        decode_batches(data[:-100], allow_partial=False)
