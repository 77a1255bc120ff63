"""Zigzag varints: round trips at the int32/int64 edges, overflow and truncation detection,
checked against kafka-python's and aiokafka's encoders."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.util import encode_varint as kp_encode_varint

from kafka_fast.errors import CorruptRecordError

I32 = (-(1 << 31), (1 << 31) - 1)
I64 = (-(1 << 63), (1 << 63) - 1)
EDGES32 = [0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, I32[0], I32[1], I32[0] + 1, I32[1] - 1]
EDGES64 = EDGES32 + [I64[0], I64[1], I64[0] + 1, I64[1] - 1, 1 << 32, -(1 << 32), 1 << 62]


def kafka_python_varint(value: int) -> bytes:
    out = bytearray()
    kp_encode_varint(value, out.append)
    return bytes(out)


def test_zigzag_table(rec):
    # From the protobuf/Kafka zigzag definition: 0,-1,1,-2,2 -> 0,1,2,3,4
    assert [rec.zigzag_encode(v) for v in (0, -1, 1, -2, 2)] == [0, 1, 2, 3, 4]
    assert rec.zigzag_encode(I32[1]) == 0xFFFFFFFE
    assert rec.zigzag_encode(I32[0]) == 0xFFFFFFFF
    assert rec.zigzag_encode(I64[0]) == (1 << 64) - 1
    assert [rec.zigzag_decode(u) for u in (0, 1, 2, 3, (1 << 64) - 1)] == [0, -1, 1, -2, I64[0]]


def test_known_encodings(rec):
    assert rec.encode_varint(0) == b"\x00"
    assert rec.encode_varint(-1) == b"\x01"
    assert rec.encode_varint(300) == b"\xd8\x04"  # zigzag 600
    assert rec.encode_varint(I32[1]) == b"\xfe\xff\xff\xff\x0f"
    assert rec.encode_varint(I32[0]) == b"\xff\xff\xff\xff\x0f"
    assert rec.encode_varlong(I64[0]) == b"\xff" * 9 + b"\x01"


@pytest.mark.parametrize("value", EDGES32)
def test_varint_edges(rec, value):
    enc = rec.encode_varint(value)
    assert enc == kafka_python_varint(value)
    assert rec.size_of_varint(value) == len(enc)
    assert rec.decode_varint(b"\xaa" + enc + b"\xbb", 1) == (value, 1 + len(enc))


@pytest.mark.parametrize("value", EDGES64)
def test_varlong_edges(rec, value):
    enc = rec.encode_varlong(value)
    assert enc == kafka_python_varint(value)
    assert rec.size_of_varint(value) == len(enc)
    assert rec.decode_varlong(enc) == (value, len(enc))


@settings(deadline=None)
@given(st.integers(*I32))
def test_varint_round_trip(rec, value):
    enc = rec.encode_varint(value)
    assert rec.decode_varint(enc) == (value, len(enc))
    assert rec.size_of_varint(value) == len(enc)


@settings(deadline=None)
@given(st.integers(*I64))
def test_varlong_round_trip(rec, value):
    enc = rec.encode_varlong(value)
    assert enc == kafka_python_varint(value)
    assert rec.decode_varlong(enc) == (value, len(enc))


def test_aiokafka_agrees(rec):
    from aiokafka.record._crecords import decode_varint_cython

    for v in EDGES32:
        assert decode_varint_cython(bytearray(rec.encode_varint(v)), 0) == (v, len(rec.encode_varint(v)))


@pytest.mark.parametrize("value", [I32[0] - 1, I32[1] + 1, 1 << 40])
def test_varint_encode_range(rec, value):
    with pytest.raises(OverflowError):
        rec.encode_varint(value)


@pytest.mark.parametrize("value", [I64[0] - 1, I64[1] + 1])
def test_varlong_encode_range(rec, value):
    with pytest.raises(OverflowError):
        rec.encode_varlong(value)


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xff\xff\xff\x1f",  # 33 bits
        b"\xff\xff\xff\xff\x7f",
        b"\x80\x80\x80\x80\x80\x00",  # six bytes
    ],
)
def test_varint_overflow_detected(rec, data):
    with pytest.raises(CorruptRecordError) as err:
        rec.decode_varint(data)
    assert "overflow" in str(err.value) or "longer" in str(err.value)


@pytest.mark.parametrize("data", [b"\xff" * 9 + b"\x02", b"\x80" * 10 + b"\x00"])
def test_varlong_overflow_detected(rec, data):
    with pytest.raises(CorruptRecordError):
        rec.decode_varlong(data)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\xd8"])
def test_truncated_varint(rec, data):
    with pytest.raises(CorruptRecordError) as err:
        rec.decode_varint(data)
    assert "truncated" in str(err.value)


def test_end_bound_respected(rec):
    with pytest.raises(CorruptRecordError):
        rec.decode_varint(b"\xd8\x04", 0, 1)
    assert rec.decode_varint(b"\xd8\x04", 0, 2) == (300, 2)


@settings(deadline=None)
@given(st.binary(max_size=12), st.integers(0, 12))
def test_native_and_pure_decode_alike(native, pure, data, pos):
    pos = min(pos, len(data))
    for fn in ("decode_varint", "decode_varlong"):
        results = []
        for impl in (native, pure):
            try:
                results.append(getattr(impl, fn)(data, pos))
            except CorruptRecordError:
                results.append("corrupt")
        assert results[0] == results[1]
