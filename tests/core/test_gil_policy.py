"""Finishing and checking ordinary batches keeps the interpreter lock (checksums of a few MB
take well under a millisecond; giving the lock up would cost a switch interval)."""

from __future__ import annotations

import pytest
from harness.gil import seconds_beside_a_busy_thread

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
