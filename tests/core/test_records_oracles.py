"""Independent oracles both ways: kafka-python's pure-Python and aiokafka's Cython record
readers/builders read what we write and we read what they write, record for record; bytes are
equal where the format is deterministic (uncompressed, same timestamps)."""

from __future__ import annotations

import struct
import zlib

import lz4.frame
import pytest
from aiokafka.record._crecords import DefaultRecordBatch as AioBatch
from aiokafka.record._crecords import DefaultRecordBatchBuilder as AioBuilder
from aiokafka.record._crecords import LegacyRecordBatchBuilder as AioLegacyBuilder
from aiokafka.record.memory_records import MemoryRecords as AioMemoryRecords
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch as KpBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KpBuilder
from kafka.record.legacy_records import LegacyRecordBatch as KpLegacyBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KpLegacyBuilder

from kafka_fast.codecs import compression as C
from kafka_fast.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
)

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]

header = st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=12))
record = st.tuples(
    st.none() | st.binary(max_size=40),  # key
    st.none() | st.binary(max_size=200),  # value
    st.lists(header, max_size=3),
    st.integers(0, 1 << 42),  # timestamp
)
batches = st.lists(record, min_size=1, max_size=12)


def ours(rec, recs, codec, **kw):
    return rec.encode_batch(
        [r[1] for r in recs], [r[0] for r in recs], timestamps=[r[3] for r in recs],
        headers=[r[2] for r in recs], compression=codec, **kw)


def expected(recs, base=0):
    return [(base + i, r[3], r[0], r[1], [tuple(h) for h in r[2]]) for i, r in enumerate(recs)]


def fields(records):
    return [(r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
            for r in records]


def kp_build(recs, codec, *, pid=-1, epoch=-1, seq=-1, txn=False):
    b = KpBuilder(2, C.codec_id(codec), txn, pid, epoch, seq, 1 << 30)
    for i, (k, v, h, ts) in enumerate(recs):
        b.append(i, ts, k, v, h)
    return bytes(b.build())


def aio_build(recs, codec, *, pid=-1, epoch=-1, seq=-1, txn=False):
    b = AioBuilder(2, C.codec_id(codec), int(txn), pid, epoch, seq, 1 << 30)
    for i, (k, v, h, ts) in enumerate(recs):
        b.append(i, ts, k, v, h)
    return bytes(b.build())


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=25, deadline=None)
@given(recs=batches)
def test_kafka_python_and_aiokafka_read_ours(rec, codec, recs):
    buf = ours(rec, recs, codec, base_offset=0, producer_id=12, producer_epoch=1,
               base_sequence=5, transactional=True)
    kp = KpBatch(buf)
    assert kp.validate_crc()
    assert kp.compression_type == C.codec_id(codec)
    assert (kp.producer_id, kp.producer_epoch, kp.base_sequence) == (12, 1, 5)
    assert kp.is_transactional
    assert fields(kp) == expected(recs)
    aio = AioBatch(buf)
    assert aio.validate_crc()
    assert fields(aio) == expected(recs)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=25, deadline=None)
@given(recs=batches)
def test_we_read_kafka_python_and_aiokafka(rec, codec, recs):
    for build in (kp_build, aio_build):
        buf = build(recs, codec, pid=3, epoch=2, seq=9, txn=True)
        (batch,) = rec.decode_batches(buf)
        # (the builders fall back to no compression when it does not pay)
        assert batch.compression == KpBatch(buf).compression_type
        assert batch.compression in (0, C.codec_id(codec))
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (3, 2, 9)
        assert batch.is_transactional
        assert batch.first_timestamp == recs[0][3]
        assert batch.max_timestamp == max(r[3] for r in recs)
        assert fields(batch.records()) == expected(recs)
        cols = batch.columns()
        assert cols.offsets.tolist() == list(range(len(recs)))
        assert cols.timestamps.tolist() == [r[3] for r in recs]
        assert cols.key_list() == [r[0] for r in recs]
        assert cols.value_list() == [r[1] for r in recs]


@settings(max_examples=40, deadline=None)
@given(recs=batches)
def test_uncompressed_bytes_identical(rec, recs):
    """Same records and timestamps: the three encoders agree byte for byte."""
    # kafka-python writes partition leader epoch 0, aiokafka (like Java) -1
    mine = ours(rec, recs, "none", partition_leader_epoch=0, producer_id=7, producer_epoch=0,
                base_sequence=0)
    assert mine == kp_build(recs, "none", pid=7, epoch=0, seq=0)
    assert ours(rec, recs, "none", producer_id=7, producer_epoch=0, base_sequence=0) == aio_build(
        recs, "none", pid=7, epoch=0, seq=0)
    builder = rec.RecordBatchBuilder(partition_leader_epoch=0, producer_id=7, producer_epoch=0,
                                     base_sequence=0)
    for k, v, h, ts in recs:
        assert builder.append(v, k, ts, h)
    assert builder.build() == mine


def test_several_batches_through_aiokafka_memory_records(rec):
    a = rec.encode_batch([b"a", b"b"], timestamps=1, base_offset=10)
    b = rec.encode_batch([b"c"], [b"k"], timestamps=2, base_offset=12, compression="lz4")
    mr = AioMemoryRecords(a + b)
    seen = []
    while mr.has_next():
        seen.extend((r.offset, r.key, r.value) for r in mr.next_batch())
    assert seen == [(10, None, b"a"), (11, None, b"b"), (12, b"k", b"c")]


# ---------------------------------------------------------------------------------------------
# legacy message sets

LEGACY = [(0, "none"), (0, "gzip"), (0, "snappy"), (1, "none"), (1, "gzip"), (1, "snappy"),
          (1, "lz4")]


def legacy_records(n):
    return [(None if i % 3 == 0 else b"k%d" % i, None if i % 4 == 1 else b"value-%d" % i,
             1_600_000_000_000 + i) for i in range(n)]


@pytest.mark.parametrize("builder_cls", [KpLegacyBuilder, AioLegacyBuilder])
@pytest.mark.parametrize("magic,codec", LEGACY)
def test_we_read_legacy_message_sets(rec, builder_cls, magic, codec):
    recs = legacy_records(5)
    b = builder_cls(magic, C.codec_id(codec), 1 << 20)
    for i, (k, v, ts) in enumerate(recs):
        b.append(i, ts if magic else None, k, v)
    buf = bytes(b.build())
    batches = rec.decode_batches(buf)
    got = [r for bt in batches for r in bt.records()]
    # oracle: kafka-python's own legacy reader over each top-level message
    oracle = []
    pos = 0
    while pos < len(buf):
        (size,) = struct.unpack_from(">i", buf, pos + 8)
        oracle.extend(KpLegacyBatch(buf[pos:pos + 12 + size], magic))
        pos += 12 + size
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (r.offset, r.timestamp if magic else -1, r.key, r.value) for r in oracle]
    assert [(r.offset, r.key, r.value) for r in got] == [
        (i, k, v) for i, (k, v, _ts) in enumerate(recs)]
    assert all(bt.magic == magic for bt in batches)
    assert all(bt.compression == C.codec_id(codec) for bt in batches)
    assert all(bt.timestamp_type == (TIMESTAMP_CREATE_TIME if magic else TIMESTAMP_NOT_AVAILABLE)
               for bt in batches)
    if magic:
        assert [r.timestamp for r in got] == [ts for _k, _v, ts in recs]
    cols = [bt.columns() for bt in batches]
    assert sum((c.value_list() for c in cols), []) == [v for _k, v, _ts in recs]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_legacy_v1_broker_offsets_and_log_append_time(rec, codec):
    """A broker rewrites the wrapper offset to the absolute last offset (inner offsets stay
    relative) and, for log-append time, the wrapper timestamp applies to every record."""
    recs = legacy_records(4)
    b = KpLegacyBuilder(1, C.codec_id(codec), 1 << 20)
    for i, (k, v, ts) in enumerate(recs):
        b.append(i, ts, k, v)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, 1003)  # wrapper offset is outside the message CRC
    buf[17] |= 0x08  # log-append time ...
    struct.pack_into(">q", buf, 18, 1_700_000_000_000)
    struct.pack_into(">I", buf, 12, zlib.crc32(buf[16:]))  # ... inside it: new CRC
    (batch,) = rec.decode_batches(bytes(buf))
    oracle = list(KpLegacyBatch(bytes(buf), 1))
    assert [r.offset for r in batch.records()] == [r.offset for r in oracle] == [1000, 1001,
                                                                                 1002, 1003]
    assert batch.base_offset == 1000 and batch.next_offset == 1004
    assert batch.timestamp_type == TIMESTAMP_LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [1_700_000_000_000] * 4


def _legacy_message(offset, magic, attrs, key, value, timestamp=None):
    """One message laid out as the protocol guide defines it (CRC32 over magic..end)."""
    body = struct.pack(">bb", magic, attrs)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    msg = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(msg)) + msg


def test_legacy_magic0_lz4_with_broken_header_checksum(rec):
    inner = b"".join(_legacy_message(100 + i, 0, 0, None, b"v%d" % i) for i in range(3))
    frame = bytearray(lz4.frame.compress(inner, block_linked=False, store_size=False))
    frame[6] = (C._xxh32_short(bytes(frame[0:6])) >> 8) & 0xFF  # what 0.8/0.9 brokers wrote
    buf = _legacy_message(102, 0, 3, None, bytes(frame))
    (batch,) = rec.decode_batches(buf)
    assert [(r.offset, r.timestamp, r.value) for r in batch.records()] == [
        (100, -1, b"v0"), (101, -1, b"v1"), (102, -1, b"v2")]
    assert batch.compression == 3 and batch.magic == 0


def test_mixed_legacy_and_v2(rec):
    buf = _legacy_message(0, 1, 0, b"k", b"old", 5) + rec.encode_batch([b"new"], timestamps=6,
                                                                        base_offset=1)
    batches = rec.decode_batches(buf)
    assert [(bt.magic, [r.value for r in bt.records()]) for bt in batches] == [
        (1, [b"old"]), (2, [b"new"])]
