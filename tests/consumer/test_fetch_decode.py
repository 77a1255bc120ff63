"""Fetch-side record processing with Fetch responses built by the protocol codec.

Neither test broker sends the aborted-transactions list in Fetch, so read_committed filtering
is asserted here, where it lives: responses carrying transactional batches, control batches
(built from the RecordBatch v2 layout: attributes bit 4 transactional, bit 5 control, key =
int16 version + int16 type) and an aborted-transactions list.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from kafka_fast.codecs.crc import crc32c
from kafka_fast.consumer.batch_view import RecordBatchView
from kafka_fast.consumer.fetch_decode import decode_partition
from kafka_fast.errors import CorruptRecordError
from kafka_fast.protocol import messages as m
from kafka_fast.records import encode_batch

ABORT, COMMIT = 0, 1


def data_batch(base, values, pid=-1, txn=False, codec="none"):
    return encode_batch(values, [b"k%d" % (base + i) for i in range(len(values))],
                        timestamps=[1_000 + base + i for i in range(len(values))],
                        base_offset=base, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                        base_sequence=0 if pid >= 0 else -1, transactional=txn,
                        compression=codec)


def control_batch(offset, pid, kind):
    raw = bytearray(encode_batch([struct.pack(">hi", 0, 7)], [struct.pack(">hh", 0, kind)],
                                 timestamps=[5_000], base_offset=offset, producer_id=pid,
                                 producer_epoch=0, base_sequence=-1, transactional=True))
    attrs = struct.unpack_from(">h", raw, 21)[0] | 0x20
    struct.pack_into(">h", raw, 21, attrs)
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def fetch_response(records, aborted, version=12):
    R = m.FetchResponse
    pd = R.PartitionData(
        partition_index=0, error_code=0, high_watermark=100, last_stable_offset=100,
        log_start_offset=0,
        aborted_transactions=[R.AbortedTransaction(producer_id=p, first_offset=o)
                              for p, o in aborted],
        records=records)
    resp = R(throttle_time_ms=0, error_code=0, session_id=0,
             responses=[R.FetchableTopicResponse(topic="t", partitions=[pd])])
    decoded = R.decode(resp.encode(version), version)
    return decoded.responses[0].partitions[0]


def log_with_transactions(codec="none"):
    """Offsets: 0-2 txn pid 1 (committed), 3-5 txn pid 2 (aborted), 6 COMMIT pid 1,
    7 ABORT pid 2, 8-9 plain, 10-11 txn pid 2 again (committed), 12 COMMIT pid 2,
    13-14 txn pid 3 (aborted, marker 15)."""
    return b"".join([
        data_batch(0, [b"a0", b"a1", b"a2"], pid=1, txn=True, codec=codec),
        data_batch(3, [b"x3", b"x4", b"x5"], pid=2, txn=True, codec=codec),
        control_batch(6, 1, COMMIT),
        control_batch(7, 2, ABORT),
        data_batch(8, [b"p8", b"p9"], codec=codec),
        data_batch(10, [b"b10", b"b11"], pid=2, txn=True, codec=codec),
        control_batch(12, 2, COMMIT),
        data_batch(13, [b"x13", b"x14"], pid=3, txn=True, codec=codec),
        control_batch(15, 3, ABORT),
    ])


def offsets_and_values(decoded):
    out = []
    for seg in decoded.segments:
        values = seg.cols.value_list()
        for i in range(seg.start, seg.stop):
            out.append((int(seg.cols.offsets[i]), values[i]))
    return out


@pytest.mark.parametrize("codec", ["none", "lz4", "zstd", "gzip", "snappy"])
def test_read_committed_returns_exactly_the_committed_records(codec):
    pd = fetch_response(log_with_transactions(codec), aborted=[(2, 3), (3, 13)])
    aborted = [(a.producer_id, a.first_offset) for a in pd.aborted_transactions]
    decoded = decode_partition(pd.records, 0, read_committed=True,
                               aborted_transactions=aborted, verify_crc=True)
    assert offsets_and_values(decoded) == [
        (0, b"a0"), (1, b"a1"), (2, b"a2"), (8, b"p8"), (9, b"p9"), (10, b"b10"), (11, b"b11")]
    assert decoded.next_offset == 16


def test_read_uncommitted_returns_every_data_record_and_no_control_record():
    pd = fetch_response(log_with_transactions(), aborted=[(2, 3), (3, 13)])
    decoded = decode_partition(pd.records, 0, read_committed=False)
    assert [o for o, _ in offsets_and_values(decoded)] == [0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 13, 14]
    assert decoded.next_offset == 16


def test_abort_marker_ends_the_aborted_range_for_that_producer_only():
    # pid 2's second transaction starts after its ABORT marker, so it is delivered.
    pd = fetch_response(log_with_transactions(), aborted=[(2, 3)])
    decoded = decode_partition(pd.records, 0, read_committed=True,
                               aborted_transactions=[(2, 3)])
    assert [o for o, _ in offsets_and_values(decoded)] == [0, 1, 2, 8, 9, 10, 11, 13, 14]


def test_fetch_from_the_middle_skips_earlier_records_and_keeps_next_offset():
    records = data_batch(0, [b"v%d" % i for i in range(10)], codec="lz4")
    decoded = decode_partition(records, 6, read_committed=True)
    assert offsets_and_values(decoded) == [(6, b"v6"), (7, b"v7"), (8, b"v8"), (9, b"v9")]
    assert decoded.next_offset == 10


def test_only_control_batches_still_advance_the_position():
    decoded = decode_partition(control_batch(40, 9, COMMIT), 40, read_committed=True)
    assert decoded.count == 0 and decoded.next_offset == 41


def test_trailing_partial_batch_is_left_for_the_next_fetch():
    whole = data_batch(0, [b"a", b"b"])
    partial = data_batch(2, [b"c", b"d"])[:30]
    decoded = decode_partition(whole + partial, 0)
    assert [o for o, _ in offsets_and_values(decoded)] == [0, 1]
    assert decoded.next_offset == 2


def test_corrupt_batch_stops_decoding_and_keeps_what_precedes_it():
    bad = bytearray(data_batch(2, [b"c", b"d"]))
    bad[-1] ^= 0xFF
    records = data_batch(0, [b"a", b"b"]) + bytes(bad) + data_batch(4, [b"e"])
    decoded = decode_partition(records, 0, verify_crc=True)
    assert isinstance(decoded.error, CorruptRecordError)
    assert "CRC" in decoded.error.args[0].str()
    assert offsets_and_values(decoded) == [(0, b"a"), (1, b"b")]
    assert decoded.next_offset == 2
    alone = decode_partition(bytes(bad), 2, verify_crc=True)
    assert isinstance(alone.error, CorruptRecordError)
    assert (alone.count, alone.next_offset) == (0, 2)
    # Without CRC checks the flipped byte (the last record's header count) is found when the
    # records are read: the same records before it come out.
    unchecked = decode_partition(records, 0)
    assert "varint" in unchecked.error.args[0].str()
    assert offsets_and_values(unchecked) == [(0, b"a"), (1, b"b")]
    assert unchecked.next_offset == 2


def test_batch_view_over_decoded_segments_matches_the_records():
    records = data_batch(0, [b"v0", None, b"v2"]) + data_batch(3, [b"v3", b"v4"], codec="zstd")
    decoded = decode_partition(records, 1)
    view = RecordBatchView([(0, 4, s) for s in decoded.segments], ["t"], with_headers=True)
    assert len(view) == 4 and view.topic == "t"
    assert view.offsets.tolist() == [1, 2, 3, 4]
    assert view.partitions.tolist() == [4, 4, 4, 4]
    assert view.timestamps.tolist() == [1001, 1002, 1003, 1004]
    assert view.values.to_pylist() == [None, b"v2", b"v3", b"v4"]
    assert view.keys.to_pylist() == [b"k1", b"k2", b"k3", b"k4"]
    data, offsets = view.values
    assert offsets.dtype == np.int64 and len(offsets) == 5
    assert [(msg.offset(), msg.value()) for msg in view] == [
        (1, None), (2, b"v2"), (3, b"v3"), (4, b"v4")]
    table = view.to_arrow()
    assert table.column("value").to_pylist() == [None, b"v2", b"v3", b"v4"]
    assert table.column("offset").to_pylist() == [1, 2, 3, 4]
    assert table.column("topic").to_pylist() == ["t"] * 4
