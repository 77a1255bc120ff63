"""RecordBatch v2 round trips with exact field checks, on both implementations."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from kafka_fast.codecs.compression import CODEC_IDS
from kafka_fast.errors import CorruptRecordError
from kafka_fast.message import TIMESTAMP_CREATE_TIME

CODECS = sorted(CODEC_IDS)


def fields(records):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]


@pytest.mark.parametrize("codec", CODECS)
def test_list_round_trip(rec, codec):
    values = [b"v0", None, b"", b"value-3" * 50]
    keys = [b"k0", b"k1", None, b""]
    ts = [1_700_000_000_000, 1_700_000_000_005, 1_699_999_999_000, 1_700_000_000_001]
    hdrs = [[("h", b"1")], None, [("a", None), ("\u00e9", b"")], []]
    buf = rec.encode_batch(values, keys, timestamps=ts, headers=hdrs, compression=codec,
                           base_offset=100, producer_id=7, producer_epoch=3, base_sequence=11,
                           transactional=True, partition_leader_epoch=5)
    (batch,) = rec.decode_batches(buf)
    assert batch.base_offset == 100
    assert batch.last_offset_delta == 3
    assert batch.next_offset == 104
    assert batch.magic == 2
    assert batch.compression == CODEC_IDS[codec]
    assert batch.timestamp_type == TIMESTAMP_CREATE_TIME
    assert batch.is_transactional is True
    assert batch.is_control is False
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (7, 3, 11)
    assert batch.partition_leader_epoch == 5
    assert batch.first_timestamp == ts[0]
    assert batch.max_timestamp == max(ts)
    assert batch.byte_size == len(buf)
    assert fields(batch.records()) == [
        (100, ts[0], b"k0", b"v0", [("h", b"1")]),
        (101, ts[1], b"k1", None, []),
        (102, ts[2], None, b"", [("a", None), ("\u00e9", b"")]),
        (103, ts[3], b"", b"value-3" * 50, []),
    ]
    cols = batch.columns()
    assert cols.offsets.dtype == np.int64 and cols.offsets.tolist() == [100, 101, 102, 103]
    assert cols.timestamps.dtype == np.int64 and cols.timestamps.tolist() == ts
    kdata, koffs = cols.keys
    assert koffs.dtype == np.int64 and koffs.tolist() == [0, 2, 4, 4, 4]
    assert bytes(kdata) == b"k0k1"
    assert cols.key_nulls.tolist() == [False, False, True, False]
    assert cols.value_nulls.tolist() == [False, True, False, False]
    assert cols.value_list() == values
    assert cols.headers == [[("h", b"1")], [], [("a", None), ("\u00e9", b"")], []]


def test_layout_matches_spec(rec):
    """Header bytes at the offsets the protocol defines, CRC32C over attributes..end."""
    import google_crc32c

    buf = rec.encode_batch([b"abc"], [b"k"], timestamps=42, base_offset=9,
                           producer_id=1234, producer_epoch=2, base_sequence=77,
                           partition_leader_epoch=3)
    (base, length, ple, magic, crc, attrs, lod, first, mx, pid, epoch, seq, count) = (
        struct.unpack_from(">qiibIhiqqqhii", buf))
    assert (base, length, ple, magic) == (9, len(buf) - 12, 3, 2)
    assert crc == google_crc32c.value(buf[21:])
    assert (attrs, lod, first, mx, pid, epoch, seq, count) == (0, 0, 42, 42, 1234, 2, 77, 1)
    # record: len, attrs 0, ts delta 0, offset delta 0, key len 1 'k', value len 3 'abc', 0 headers
    assert buf[61:] == bytes([0x14, 0, 0, 0, 0x02]) + b"k" + bytes([0x06]) + b"abc" + b"\x00"


def test_numpy_and_packed_inputs_equal_list(rec):
    rows = np.arange(5 * 7, dtype=np.uint8).reshape(5, 7)
    as_list = [bytes(r) for r in rows]
    data = b"".join(as_list)
    offsets = np.arange(0, 36, 7, dtype=np.int64)
    a = rec.encode_batch(as_list, as_list, timestamps=5)
    b = rec.encode_batch(rows, rows, timestamps=5)
    c = rec.encode_batch((data, offsets), (np.frombuffer(data, np.uint8), offsets), timestamps=5)
    assert a == b == c


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_rows_pick_records_out_of_every_column_shape(rec, codec):
    """``rows`` encodes the picked records (repeats and any order) of arrays, packed columns
    and lists, with their timestamps and per-record headers: the same bytes as encoding the
    picked records themselves."""
    n = 12
    values = np.frombuffer(b"".join(b"v%03d" % i for i in range(n)), np.uint8).reshape(n, 4)
    keys_list = [None if i % 5 == 0 else b"key-%d" % i for i in range(n)]
    data = b"".join(k or b"" for k in keys_list)
    offsets = np.zeros(n + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(k or b"") for k in keys_list])
    nulls = np.array([k is None for k in keys_list])
    ts = np.arange(n, dtype=np.int64) * 10 + 1000
    headers = [[("i", b"%d" % i)] for i in range(n)]
    rows = [9, 2, 2, 11, 0, 5]
    picked = rec.encode_batch([bytes(values[r]) for r in rows], [keys_list[r] for r in rows],
                              timestamps=ts[rows], headers=[headers[r] for r in rows],
                              compression=codec)
    for vals, keys in ((values, (data, offsets, nulls)), ([bytes(v) for v in values], keys_list)):
        got = rec.encode_batch(vals, keys, timestamps=ts, headers=headers, compression=codec,
                               rows=np.array(rows))
        assert got == picked
    (batch,) = rec.decode_batches(picked)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()] == [
        (i, int(ts[r]), keys_list[r], b"v%03d" % r) for i, r in enumerate(rows)]


def test_rows_out_of_range_are_refused(rec):
    values = [b"a", b"b", b"c"]
    for bad in ([3], [-1], [0, 1, 7]):
        with pytest.raises(IndexError, match="outside the 3 records"):
            rec.encode_batch(values, rows=bad)
    with pytest.raises(ValueError, match="at least one record"):
        rec.encode_batch(values, rows=[])
    with pytest.raises(ValueError, match="1-D"):
        rec.encode_batch(values, rows=[[0, 1]])


def test_packed_offsets_are_checked_for_the_records_encoded(rec):
    """Bad offsets are refused for every record that is encoded, and only for those: picking
    rows checks just the picked rows (a large column is not scanned again per batch)."""
    data = b"aabbbcc"
    offsets = np.array([0, 2, 5, 99, 7], dtype=np.int64)  # record 2 ends past the data
    buf = rec.encode_batch((data, offsets), rows=[0, 1], timestamps=5)
    (batch,) = rec.decode_batches(buf)
    assert [r.value for r in batch.records()] == [b"aa", b"bbb"]
    for rows in ([1, 2], [3], None):
        with pytest.raises(ValueError, match=r"values: packed offsets\[2:4\] = \(5, 99\) "
                                             r"outside 0\.\.7" if rows != [3] else
                                             r"values: packed offsets\[3:5\] = \(99, 7\)"):
            rec.encode_batch((data, offsets), rows=rows, timestamps=5)
    keys = (b"k", np.array([0, 1, 1, 1, 2], dtype=np.int64))  # key 3 ends past its data
    assert rec.decode_batches(rec.encode_batch(
        [b"a", b"b", b"c", b"d"], keys, rows=[2, 0], timestamps=5))[0].records()[1].key == b"k"
    with pytest.raises(ValueError, match=r"keys: packed offsets\[3:5\] = \(1, 2\) outside 0\.\.1"):
        rec.encode_batch([b"a", b"b", b"c", b"d"], keys, rows=[3], timestamps=5)


def test_packed_nulls_round_trip(rec):
    data = b"aaabbcccc"
    offsets = np.array([0, 3, 5, 5, 9], dtype=np.int64)
    nulls = np.array([False, False, True, False])
    buf = rec.encode_batch((data, offsets, nulls), timestamps=np.array([1, 2, 3, 4]))
    (batch,) = rec.decode_batches(buf)
    assert [r.value for r in batch.records()] == [b"aaa", b"bb", None, b"cccc"]
    assert [r.key for r in batch.records()] == [None] * 4
    cols = batch.columns()
    again = rec.encode_batch((cols.values[0], cols.values[1], cols.value_nulls),
                             timestamps=cols.timestamps)
    assert again == buf


def test_shared_headers_apply_to_every_record(rec):
    buf = rec.encode_batch([b"a", b"b"], headers=[("x", b"1")], timestamps=0)
    recs = rec.decode_batches(buf)[0].records()
    assert [r.headers for r in recs] == [[("x", b"1")], [("x", b"1")]]


def test_builder_matches_encode_batch(rec):
    builder = rec.RecordBatchBuilder(base_offset=3)
    values = [b"v%d" % i for i in range(10)]
    for i, v in enumerate(values):
        assert builder.append(v, key=b"k", timestamp=1000 + i, headers=[("h", b"x")]) is True
    assert len(builder) == 10
    expected = rec.encode_batch(values, [b"k"] * 10, timestamps=list(range(1000, 1010)),
                                headers=[("h", b"x")], base_offset=3)
    assert builder.size_in_bytes == len(expected)
    assert builder.build() == expected


def test_builder_full(rec):
    builder = rec.RecordBatchBuilder(batch_size=100)
    assert builder.append(b"x" * 500, timestamp=1) is True  # the first record always fits
    assert builder.append(b"y", timestamp=1) is False
    assert len(builder) == 1
    (batch,) = rec.decode_batches(builder.build())
    assert [r.value for r in batch.records()] == [b"x" * 500]


def test_builder_set_producer_state(rec):
    builder = rec.RecordBatchBuilder(compression="lz4")
    builder.append(b"v", timestamp=7)
    builder.set_producer_state(99, 4, 1000, True)
    (batch,) = rec.decode_batches(builder.build())
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (99, 4, 1000)
    assert batch.is_transactional is True


def test_patch_producer_fields(rec):
    buf = rec.encode_batch([b"a", b"b"], timestamps=1, compression="zstd")
    patched = rec.patch_producer_fields(buf, 5, 6, 7)
    (batch,) = rec.decode_batches(patched)  # CRC verified
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 6, 7)
    assert batch.is_transactional is False
    assert patched == rec.encode_batch([b"a", b"b"], timestamps=1, compression="zstd",
                                       producer_id=5, producer_epoch=6, base_sequence=7)
    txn = rec.patch_producer_fields(buf, 5, 6, 7, True)
    assert rec.decode_batches(txn)[0].is_transactional is True


def test_several_batches_and_trailing_partial(rec):
    a = rec.encode_batch([b"a"], timestamps=1, base_offset=0)
    b = rec.encode_batch([b"b", b"c"], timestamps=2, base_offset=1, compression="gzip")
    c = rec.encode_batch([b"d"], timestamps=3, base_offset=3)
    data = a + b + c
    batches = rec.decode_batches(data)
    assert [r.value for bt in batches for r in bt.records()] == [b"a", b"b", b"c", b"d"]
    assert len(rec.decode_batches(data[: len(a + b)], allow_partial=False)) == 2
    for cut in range(len(a + b) + 1, len(data)):
        got = rec.decode_batches(data[:cut])
        assert [bt.base_offset for bt in got] == [0, 1]
        with pytest.raises(CorruptRecordError):
            rec.decode_batches(data[:cut], allow_partial=False)


def test_empty_input(rec):
    assert rec.decode_batches(b"") == []


def test_bad_crc_detected(rec):
    buf = bytearray(rec.encode_batch([b"hello"], timestamps=1))
    buf[-2] ^= 1  # last value byte
    with pytest.raises(CorruptRecordError) as err:
        rec.decode_batches(bytes(buf))
    assert "CRC" in str(err.value)
    assert err.value.position == 0
    (batch,) = rec.decode_batches(bytes(buf), verify_crc=False)
    assert batch.records()[0].value == b"helln"
