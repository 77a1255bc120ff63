"""Truncated, forged and random input raises ProtocolError naming where decoding failed."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_fast.errors import ProtocolError
from kafka_fast.protocol.messages import FetchResponse, MetadataResponse, ProduceRequest

from .values import all_message_classes, populated

CLASSES = all_message_classes()


def _sample_versions(cls) -> list[int]:
    picks = {cls.MIN_VERSION, cls.MAX_VERSION}
    if cls.FLEXIBLE_MIN is not None and cls.MIN_VERSION <= cls.FLEXIBLE_MIN <= cls.MAX_VERSION:
        picks.add(cls.FLEXIBLE_MIN)
    return sorted(picks)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.NAME)
def test_every_prefix_raises(cls):
    for version in _sample_versions(cls):
        data = populated(cls, version, seed=3).encode(version)
        for cut in range(len(data)):
            with pytest.raises(ProtocolError) as info:
                cls.decode(data[:cut], version)
            assert f"{cls.NAME} v{version}" in str(info.value)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.NAME)
def test_trailing_bytes_raise_when_strict(cls):
    version = cls.MAX_VERSION
    data = populated(cls, version).encode(version)
    with pytest.raises(ProtocolError, match="unexpected bytes after the last field"):
        cls.decode(data + b"\x00", version, strict=True)
    assert cls.decode(data + b"\x00", version) == cls.decode(data, version, strict=True)


def test_error_names_message_version_and_field():
    data = populated(FetchResponse, 12).encode(12)
    records_len_at = data.index(bytes(range(256))) - 2  # compact length varint (2 bytes)
    with pytest.raises(ProtocolError) as info:
        FetchResponse.decode(data[: records_len_at + 10], 12)
    text = str(info.value)
    assert "FetchResponse v12" in text and "PartitionData.records" in text, text


def test_forged_array_length_is_rejected_before_allocating():
    # MetadataResponse v0: brokers array claiming 2**31-1 entries in a 10-byte frame.
    data = struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 6
    with pytest.raises(ProtocolError, match=r"MetadataResponse v0.*brokers.*2147483647 elements"):
        MetadataResponse.decode(data, 0)


def test_forged_string_and_records_lengths_are_rejected():
    data = bytearray(populated(ProduceRequest, 3).encode(3))
    # transactional_id is the first field: claim a 32767-byte string.
    data[0:2] = struct.pack(">h", 0x7FFF)
    with pytest.raises(ProtocolError, match="transactional_id.*exceeds"):
        ProduceRequest.decode(bytes(data), 3)
    data = bytearray(populated(ProduceRequest, 3).encode(3))
    start = data.index(bytes(range(256))) - 4
    data[start:start + 4] = struct.pack(">i", 0x7FFFFFF0)
    with pytest.raises(ProtocolError, match="PartitionProduceData.records.*exceeds"):
        ProduceRequest.decode(bytes(data), 3)


def test_overlong_varint_is_rejected():
    # FetchResponse v12 starts with throttle (int32), error code, session id, then a compact
    # array length: six continuation bytes make an invalid varint.
    data = b"\x00" * 10 + b"\xff" * 6 + b"\x01"
    with pytest.raises(ProtocolError, match="varint"):
        FetchResponse.decode(data, 12)


def test_bad_nullable_struct_marker():
    from kafka_fast.protocol.messages import ConsumerGroupHeartbeatResponse as R

    assert R.decode(populated(R, 0).encode(0), 0).assignment is not None
    none = R(assignment=None).encode(0)
    assert R.decode(none, 0).assignment is None
    broken = bytearray(none)
    broken[-2] = 7  # presence byte of the assignment: neither -1 nor 1
    with pytest.raises(ProtocolError, match="presence byte 7"):
        R.decode(bytes(broken), 0)


def test_unsupported_version_is_protocol_error():
    with pytest.raises(ProtocolError, match="unsupported version"):
        FetchResponse.decode(b"", FetchResponse.MAX_VERSION + 1)
    with pytest.raises(ProtocolError, match="unsupported version"):
        FetchResponse().encode(-1)


_message = st.sampled_from(CLASSES)


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(cls=_message, data=st.data(), garbage=st.binary(max_size=300))
def test_random_garbage_never_raises_anything_else(cls, data, garbage):
    version = data.draw(st.integers(cls.MIN_VERSION, cls.MAX_VERSION))
    try:
        cls.decode(garbage, version)
    except ProtocolError:
        pass


@settings(max_examples=400, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(cls=_message, data=st.data())
def test_mutated_frames_never_raise_anything_else(cls, data):
    version = data.draw(st.integers(cls.MIN_VERSION, cls.MAX_VERSION))
    frame = bytearray(populated(cls, version, seed=5).encode(version))
    for _ in range(data.draw(st.integers(1, 4))):
        if not frame:
            break
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at] = data.draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x01, 0xFE]))
    try:
        decoded = cls.decode(bytes(frame), version)
    except ProtocolError:
        return
    # Whatever decodes must encode again (possibly to different bytes, e.g. bool 0x7F -> 1).
    assert isinstance(decoded.encode(version), bytes)


@settings(max_examples=300, deadline=2000)
@given(api_key=st.sampled_from([0, 1, 3, 10, 18]), data=st.data(),
       frame=st.binary(max_size=200))
def test_garbage_response_frames(api_key, data, frame):
    from kafka_fast.protocol import API_KEYS, decode_response

    response_cls = API_KEYS[api_key][1]
    version = data.draw(st.integers(response_cls.MIN_VERSION, response_cls.MAX_VERSION))
    try:
        decode_response(frame, response_cls, version)
    except ProtocolError:
        pass
