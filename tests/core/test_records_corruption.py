"""Malformed input: single-bit flips, truncations, forged fields; every fault is a
CorruptRecordError (never a crash, hang or huge allocation)."""

from __future__ import annotations

import struct

import google_crc32c
import pytest

from kafka_fast.codecs import compression as C
from kafka_fast.errors import CorruptRecordError

HEADER = struct.Struct(">qiibIhiqqqhii")


def small_batch(rec, codec="none"):
    return rec.encode_batch([b"v1", None, b"value"], [b"k", b"key", None], timestamps=[5, 6, 9],
                            headers=[[("h", b"x")], [], [("n", None)]], compression=codec,
                            base_offset=40, producer_id=1, producer_epoch=0, base_sequence=0)


def fix_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, google_crc32c.value(bytes(buf[21:])))
    return bytes(buf)


def forge(records: bytes, count: int, attrs: int = 0, length: int | None = None) -> bytes:
    """A batch header as the protocol defines it around `records`, with a correct CRC."""
    n = len(records) + 49 if length is None else length
    head = bytearray(HEADER.pack(0, n, -1, 2, 0, attrs, max(count - 1, 0), 1, 1, -1, -1, -1,
                                 count))
    return fix_crc(head + records)


def record(body: bytes) -> bytes:
    """A record with the given body (after its length varint), length as a zigzag varint."""
    assert len(body) < 64
    return bytes([len(body) * 2]) + body


# key length 1 'k', value length 1 'v', no headers
GOOD_BODY = b"\x00\x00\x00\x02k\x02v\x00"
LONG_BODY = b"\x00\x00\x00\x02k\x14" + b"v" * 10 + b"\x00"


def records_of(rec, data):
    (batch,) = rec.decode_batches(data)
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records()]


def test_forged_batch_is_valid_when_fields_are(rec):
    assert records_of(rec, forge(record(GOOD_BODY), 1)) == [(0, 1, b"k", b"v", [])]


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_every_bit_flip_detected(rec, codec):
    buf = small_batch(rec, codec)
    good = records_of(rec, buf)
    for i in range(len(buf)):
        for bit in range(8):
            bad = bytearray(buf)
            bad[i] ^= 1 << bit
            bad = bytes(bad)
            if i < 8:  # base offset: not covered by the CRC; shifts every offset
                (batch,) = rec.decode_batches(bad)
                base = struct.unpack_from(">q", bad)[0]
                assert batch.base_offset == base
                assert records_of(rec, bad) == [(base + j, *r[1:]) for j, r in enumerate(good)]
            elif 12 <= i < 16:  # partition leader epoch: not covered by the CRC either
                (batch,) = rec.decode_batches(bad)
                assert batch.partition_leader_epoch == struct.unpack_from(">i", bad, 12)[0]
                assert records_of(rec, bad) == good
            elif 8 <= i < 12:  # length: shorter -> CRC/size error, longer -> partial batch
                try:
                    assert rec.decode_batches(bad) == []
                except CorruptRecordError:
                    pass
                with pytest.raises(CorruptRecordError):
                    rec.decode_batches(bad, allow_partial=False)
            else:
                with pytest.raises(CorruptRecordError):
                    rec.decode_batches(bad)


def test_every_truncation_of_the_buffer(rec):
    a = small_batch(rec)
    b = small_batch(rec, "zstd")
    data = a + b
    first = records_of(rec, a)
    for cut in range(len(data) + 1):
        got = rec.decode_batches(data[:cut])
        assert len(got) == (0 if cut < len(a) else 1 if cut < len(data) else 2)
        if got:
            assert [(r.offset, r.timestamp, r.key, r.value, r.headers)
                    for r in got[0].records()] == first
        if cut not in (0, len(a), len(data)):
            with pytest.raises(CorruptRecordError):
                rec.decode_batches(data[:cut], allow_partial=False)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_every_truncation_of_the_records(rec, codec):
    """Records cut short inside a batch whose length and CRC agree with the cut."""
    buf = small_batch(rec, codec)
    for cut in range(61, len(buf)):
        bad = bytearray(buf[:cut])
        struct.pack_into(">i", bad, 8, cut - 12)
        with pytest.raises(CorruptRecordError):
            (batch,) = rec.decode_batches(fix_crc(bad))
            batch.records()
        with pytest.raises(CorruptRecordError):
            (batch,) = rec.decode_batches(fix_crc(bad))
            batch.columns()


BAD_RECORDS = [
    (record(GOOD_BODY) + b"\x00", 1, "left after"),  # trailing byte after the last record
    (record(GOOD_BODY) * 2, 1, "left after"),  # fewer records declared than present
    (record(GOOD_BODY), 2, "cannot fit"),  # more records declared than can fit
    (record(LONG_BODY) * 2, 3, "fewer records"),
    (b"\x00" * 7 + record(GOOD_BODY), 2, "truncated record"),  # empty record body
    (record(b"\x00\x00\x00\x03k\x02v\x00"), 1, "negative key length"),  # key length -2
    (record(b"\x00\x00\x00\x02k\x05v\x00"), 1, "negative value length"),
    (record(b"\x00\x00\x00\x10k\x02v\x00"), 1, "key length"),  # key length 8 > record
    (record(b"\x00\x00\x00\x02k\x02v\x01"), 1, "negative header count"),
    (record(b"\x00\x00\x00\x02k\x02v\x7e"), 1, "header count"),  # 63 headers
    (record(b"\x00\x00\x00\x02k\x02v\x02\x01\x00"), 1, "header key length"),  # null key
    (record(b"\x00\x00\x00\x02k\x02v\x02\x02h\x03"), 1, "header value length"),
    (record(GOOD_BODY + b"\x00"), 1, "record"),  # record longer than its fields
    (b"\xff\xff\xff\xff\x1f" + GOOD_BODY * 2, 1, "overflow"),  # record length varint > int32
    (b"\x80\x80\x80\x80\x80\x00" + GOOD_BODY, 1, "overflow"),  # 6-byte varint
    (record(b"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f\x00\x02k\x02v\x00"), 1, "overflow"),
    (b"\x03" + GOOD_BODY, 1, "negative record length"),
    (b"\x7e" + GOOD_BODY, 1, "record length"),  # 63 > what is left
]


@pytest.mark.parametrize("records,count,reason", BAD_RECORDS)
@pytest.mark.parametrize("view", ["records", "columns"])
def test_forged_records(rec, records, count, reason, view):
    data = forge(records, count)
    (batch,) = rec.decode_batches(data)
    with pytest.raises(CorruptRecordError) as err:
        getattr(batch, view)()
    assert reason in str(err.value)
    assert 0 <= err.value.position <= len(data)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("records,count,reason", BAD_RECORDS[:6])
def test_forged_records_inside_compression(rec, codec, records, count, reason):
    data = forge(C.compress(codec, records), count, attrs=C.codec_id(codec))
    (batch,) = rec.decode_batches(data)
    with pytest.raises(CorruptRecordError) as err:
        batch.records()
    assert reason in str(err.value)
    assert err.value.position in (0, 57)  # the batch, or its record count field


def test_negative_record_count(rec):
    with pytest.raises(CorruptRecordError, match="negative record count"):
        rec.decode_batches(forge(record(GOOD_BODY), -1))


@pytest.mark.parametrize("code", [5, 6, 7])
def test_unknown_compression_code(rec, code):
    with pytest.raises(CorruptRecordError, match=f"unknown compression code {code}"):
        rec.decode_batches(forge(record(GOOD_BODY), 1, attrs=code))


def test_bad_compressed_payload(rec):
    data = forge(b"definitely not lz4", 1, attrs=3)
    (batch,) = rec.decode_batches(data)
    with pytest.raises(CorruptRecordError, match="lz4"):
        batch.records()


def test_decompression_limit(rec, monkeypatch):
    data = rec.encode_batch([b"\x00" * 100_000] * 20, timestamps=0, compression="zstd")
    (batch,) = rec.decode_batches(data)
    assert len(batch.records()) == 20
    monkeypatch.setattr(C, "MAX_DECOMPRESSED_SIZE", 1_000_000)
    with pytest.raises(CorruptRecordError, match="more than 1000000 bytes"):
        batch.columns()


@pytest.mark.parametrize("length,reason", [(13, "below the minimum"), (-5, "below the minimum"),
                                           (48, "magic 2 minimum")])
def test_batch_length_too_small(rec, length, reason):
    data = bytearray(forge(record(GOOD_BODY), 1))
    struct.pack_into(">i", data, 8, length)
    with pytest.raises(CorruptRecordError, match=reason) as err:
        rec.decode_batches(bytes(data) + bytes(100))
    assert err.value.position == 8


@pytest.mark.parametrize("magic", [3, 0x82, 0xFF])
def test_unknown_magic(rec, magic):
    data = bytearray(forge(record(GOOD_BODY), 1))
    data[16] = magic
    with pytest.raises(CorruptRecordError, match="unknown magic") as err:
        rec.decode_batches(bytes(data))
    assert err.value.position == 16


def test_forged_huge_count_allocates_nothing(rec):
    data = forge(record(GOOD_BODY), 0x7FFFFFFF)
    (batch,) = rec.decode_batches(data)
    assert len(batch) == 0x7FFFFFFF
    for view in ("records", "columns"):
        with pytest.raises(CorruptRecordError, match="cannot fit"):
            getattr(batch, view)()


def test_error_position_points_at_the_fault(rec):
    a = small_batch(rec)
    b = forge(record(b"\x00\x00\x00\x03k\x02v\x00"), 1)
    batches = rec.decode_batches(a + b)
    with pytest.raises(CorruptRecordError) as err:
        batches[1].records()
    # the key length varint sits at: batch start + 61 + record length (1) + attrs, ts, offset
    assert err.value.position == len(a) + 61 + 4


def test_log_append_time_and_control_batches(rec):
    buf = bytearray(rec.encode_batch([b"a", b"b"], timestamps=[10, 20]))
    struct.pack_into(">h", buf, 21, 0x08)
    struct.pack_into(">q", buf, 35, 99)  # max timestamp set by the broker
    (batch,) = rec.decode_batches(fix_crc(buf))
    assert batch.timestamp_type == 2
    assert [r.timestamp for r in batch.records()] == [99, 99]
    assert batch.columns().timestamps.tolist() == [99, 99]

    key = struct.pack(">hh", 0, 1)  # version 0, COMMIT
    value = struct.pack(">hi", 0, 17)  # version 0, coordinator epoch
    ctl = bytearray(rec.encode_batch([value], [key], timestamps=1, producer_id=5,
                                     producer_epoch=1, transactional=True))
    struct.pack_into(">h", ctl, 21, 0x30)
    (batch,) = rec.decode_batches(fix_crc(ctl))
    assert batch.is_control and batch.is_transactional
    (r,) = batch.records()
    assert (r.key, r.value) == (key, value)
    from kafka_fast.records import CONTROL_COMMIT, decode_control_key
    assert decode_control_key(r.key) == (0, CONTROL_COMMIT)
