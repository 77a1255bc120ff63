"""Property tests and bounded fuzzing of the record engine.

Random batches round-trip through every codec on both implementations, which produce the
same bytes; random and mutated input never does anything but decode or raise
CorruptRecordError, and both implementations reach the same outcome.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_fast.errors import CorruptRecordError

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
FUZZ = settings(max_examples=2500, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

header = st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=8))
record = st.tuples(
    st.none() | st.binary(max_size=30),
    st.none() | st.binary(max_size=120),
    st.lists(header, max_size=2),
    st.integers(-(1 << 62), 1 << 62),
)
batch_args = st.fixed_dictionaries({
    "recs": st.lists(record, min_size=1, max_size=10),
    "codec": st.sampled_from(CODECS),
    "base_offset": st.integers(0, 1 << 62),
    "pid": st.integers(-1, 1 << 62),
    "epoch": st.integers(-1, 32767),
    "seq": st.integers(-1, (1 << 31) - 1),
    "txn": st.booleans(),
})


def encode(rec, a):
    recs = a["recs"]
    return rec.encode_batch(
        [r[1] for r in recs], [r[0] for r in recs], timestamps=[r[3] for r in recs],
        headers=[r[2] for r in recs], compression=a["codec"], base_offset=a["base_offset"],
        producer_id=a["pid"], producer_epoch=a["epoch"], base_sequence=a["seq"],
        transactional=a["txn"])


def outcome(rec, data, verify_crc):
    """Everything decodable from `data`, or the string 'corrupt'."""
    try:
        out = []
        for b in rec.decode_batches(data, verify_crc=verify_crc):
            head = (b.base_offset, b.last_offset_delta, b.magic, b.compression,
                    b.timestamp_type, b.is_transactional, b.is_control, b.producer_id,
                    b.producer_epoch, b.base_sequence, b.first_timestamp, b.max_timestamp,
                    b.byte_size, b.next_offset)
            try:
                recs = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()]
            except CorruptRecordError:
                recs = "corrupt"
            try:
                c = b.columns()
                cols = (c.offsets.tolist(), c.timestamps.tolist(), c.key_list(), c.value_list(),
                        c.headers)
            except CorruptRecordError:
                cols = "corrupt"
            if recs != "corrupt":  # columns agree with records
                assert cols != "corrupt"
                assert cols[0] == [r[0] for r in recs] and cols[1] == [r[1] for r in recs]
                assert cols[2] == [r[2] for r in recs] and cols[3] == [r[3] for r in recs]
                assert cols[4] in (None, [r[4] for r in recs])
            else:
                assert cols == "corrupt"
            out.append((head, recs))
        return out
    except CorruptRecordError:
        return "corrupt"


@settings(max_examples=60, deadline=None)
@given(a=batch_args)
def test_round_trip_every_codec_native_equals_pure(native, pure, a):
    buf = encode(native, a)
    assert encode(pure, a) == buf
    for impl in (native, pure):
        (b,) = impl.decode_batches(buf)
        assert (b.base_offset, b.producer_id, b.producer_epoch, b.base_sequence,
                b.is_transactional) == (a["base_offset"], a["pid"], a["epoch"], a["seq"],
                                        a["txn"])
        assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in b.records()] == [
            (a["base_offset"] + i, ts, k, v, [tuple(h) for h in hs])
            for i, (k, v, hs, ts) in enumerate(a["recs"])]
    assert outcome(native, buf, True) == outcome(pure, buf, True)


@settings(max_examples=40, deadline=None)
@given(a=batch_args, size=st.integers(60, 4000))
def test_builder_native_equals_pure(native, pure, a, size):
    built = []
    for impl in (native, pure):
        b = impl.RecordBatchBuilder(compression=a["codec"], batch_size=size,
                                    base_offset=a["base_offset"])
        accepted = [b.append(v, k, ts, h) for k, v, h, ts in a["recs"]]
        built.append((accepted, len(b), b.size_in_bytes, b.build()))
    assert built[0] == built[1]
    accepted, n, _size, buf = built[0]
    assert accepted[0] is True  # the first record always fits
    assert n == sum(accepted)
    got = [(r.key, r.value) for r in pure.decode_batches(buf)[0].records()]
    assert got == [(k, v) for (k, v, _h, _ts), ok in zip(a["recs"], accepted, strict=True) if ok]


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 30), width=st.integers(0, 40), codec=st.sampled_from(CODECS),
       seed=st.integers(0, 2**32 - 1))
def test_numpy_and_packed_paths_match_lists(rec, rows, width, codec, seed):
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(rows, width), dtype=np.uint8)
    lens = rng.integers(0, 50, size=rows)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    data = rng.integers(0, 256, size=int(offsets[-1]), dtype=np.uint8)
    nulls = rng.random(rows) < 0.3
    ts = rng.integers(0, 1 << 40, size=rows, dtype=np.int64)
    packed_list = [None if nulls[i] else data[offsets[i]:offsets[i + 1]].tobytes()
                   for i in range(rows)]
    a = rec.encode_batch(arr, (data, offsets, nulls), timestamps=ts, compression=codec)
    b = rec.encode_batch([r.tobytes() for r in arr], packed_list, timestamps=ts.tolist(),
                         compression=codec)
    assert a == b
    cols = rec.decode_batches(a)[0].columns()
    assert cols.key_nulls.tolist() == nulls.tolist()
    assert cols.key_list() == packed_list
    assert np.array_equal(cols.values[0].reshape(rows, width), arr)
    assert cols.timestamps.tolist() == ts.tolist()


# ---------------------------------------------------------------------------------------------
# fuzzing: never a crash, same outcome on both implementations


@FUZZ
@given(data=st.binary(max_size=400), verify=st.booleans())
def test_fuzz_random_bytes(native, pure, data, verify):
    assert outcome(native, data, verify) == outcome(pure, data, verify)


@st.composite
def mutated(draw):
    a = draw(batch_args)
    buf = bytearray(encode_fixed(a))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["set", "flip", "insert", "delete", "cut"]))
        i = draw(st.integers(0, max(len(buf) - 1, 0)))
        if kind == "set" and buf:
            buf[i] = draw(st.integers(0, 255))
        elif kind == "flip" and buf:
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            buf[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del buf[i:i + draw(st.integers(1, 8))]
        else:
            del buf[i:]
    return bytes(buf)


def encode_fixed(a):
    from kafka_fast._pure import records

    return encode(records, a)


@FUZZ
@given(data=mutated())
def test_fuzz_mutated_batches(native, pure, data):
    """Mutations of valid batches, decoded without the CRC check so the parsers see them."""
    assert outcome(native, data, False) == outcome(pure, data, False)
    assert outcome(native, data, True) == outcome(pure, data, True)


@FUZZ
@given(data=mutated(), header=st.binary(min_size=61, max_size=61))
def test_fuzz_forged_headers(native, pure, data, header):
    """Arbitrary batch headers in front of valid and mutated record sections."""
    import struct

    body = data[61:]
    forged = bytearray(header + body)
    struct.pack_into(">i", forged, 8, len(forged) - 12)
    forged[16] = 2
    forged = bytes(forged)
    assert outcome(native, forged, False) == outcome(pure, forged, False)
