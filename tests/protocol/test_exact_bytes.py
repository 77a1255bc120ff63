"""Frames built by hand from the protocol spec, compared byte for byte."""

from __future__ import annotations

import uuid

import pytest

from kafka_fast.errors import ProtocolError
from kafka_fast.protocol import by_name, decode_response, frame_request, headers
from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FetchResponse,
    MetadataRequest,
    ProduceRequest,
    RequestHeader,
    ResponseHeader,
)


def joined(chunks) -> bytes:
    return b"".join(bytes(c) for c in chunks)


def test_api_versions_request_v3_frame():
    req = ApiVersionsRequest(client_software_name="kafka-fast", client_software_version="1.0")
    frame = joined(frame_request(req, 3, 7, "cli"))
    expected = bytes.fromhex(
        "0000001e"        # size: 30
        "0012" "0003"     # api key 18, version 3
        "00000007"        # correlation id
        "0003" "636c69"   # client id "cli": classic int16 length even in header v2
        "00"              # header tagged fields
        "0b" "6b61666b612d66617374"  # compact string "kafka-fast" (10 + 1)
        "04" "312e30"     # compact string "1.0"
        "00"              # body tagged fields
    )
    assert frame == expected


def test_api_versions_request_v0_frame_has_empty_body():
    frame = joined(frame_request(ApiVersionsRequest(), 0, 1, None))
    assert frame == bytes.fromhex("0000000a" "0012" "0000" "00000001" "ffff")


def test_metadata_request_v12_frame():
    topic_id = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    req = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(topic_id=topic_id, name="t1")],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=True,
    )
    body = bytes.fromhex(
        "02"                                  # compact array, 1 element
        "00112233445566778899aabbccddeeff"    # topic id
        "03" "7431"                           # compact nullable string "t1"
        "00"                                  # topic tagged fields
        "00"                                  # allow_auto_topic_creation false
        "01"                                  # include_topic_authorized_operations true
        "00"                                  # tagged fields
    )
    assert req.encode(12) == body
    head = bytes.fromhex("0003" "000c" "0000002a" "0002" "6b66" "00")
    assert joined(frame_request(req, 12, 42, "kf")) == len(head + body).to_bytes(4, "big") + head + body
    assert MetadataRequest.decode(body, 12, strict=True) == req


def test_metadata_request_v1_null_topics_means_all():
    assert MetadataRequest(topics=None).encode(1) == b"\xff\xff\xff\xff"
    # null array, allow_auto_topic_creation (default true), two false flags, no tags
    assert MetadataRequest(topics=None).encode(9) == bytes.fromhex("00" "01" "00" "00" "00")
    assert MetadataRequest.decode(b"\xff\xff\xff\xff", 1).topics is None
    assert MetadataRequest.decode(b"\x00\x00\x00\x00", 1).topics == []


def test_response_header_v1_with_tagged_field():
    frame = bytes.fromhex("0000002a" "01" "05" "02" "abcd") + b"BODY"
    assert headers.decode_response_header(frame, 1) == (42, 9)
    assert headers.decode_response_header(frame, 0) == (42, 4)
    decoded = ResponseHeader.decode(frame[:9], 1)
    assert decoded.correlation_id == 42
    assert decoded.unknown_tagged_fields == [(5, b"\xab\xcd")]
    assert decoded.encode(1) == frame[:9]


def test_api_versions_response_v3_with_tagged_fields():
    body = bytes.fromhex(
        "0000"                      # error code
        "02" "0012" "0000" "0003" "00"   # api_keys: [ApiVersions 0-3], entry tagged fields
        "00000000"                  # throttle time
        "02"                        # two tagged fields
        "01" "08" "0000000000000005"     # tag 1 FinalizedFeaturesEpoch = 5
        "03" "01" "01"                   # tag 3 ZkMigrationReady = true
    )
    resp = ApiVersionsResponse.decode(body, 3, strict=True)
    assert resp.error_code == 0
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 3)]
    assert resp.finalized_features_epoch == 5
    assert resp.zk_migration_ready is True
    assert resp.supported_features == []
    assert resp.encode(3) == body
    frame = bytes.fromhex("00000063") + body  # ApiVersions responses use header v0
    assert decode_response(frame, ApiVersionsResponse, 3)[0] == 0x63


def test_fetch_response_v4_records_are_zero_copy():
    records = b"\x00" * 12 + b"RECORD-BYTES"
    body = (
        bytes.fromhex("00000000")        # throttle
        + bytes.fromhex("00000001" "0001" "74")  # one topic "t"
        + bytes.fromhex("00000001")      # one partition
        + bytes.fromhex("00000003" "0000" "000000000000000a" "0000000000000009")
        + bytes.fromhex("ffffffff")      # aborted transactions: null
        + len(records).to_bytes(4, "big") + records
    )
    buf = bytearray(body)
    resp = FetchResponse.decode(buf, 4, strict=True)
    part = resp.responses[0].partitions[0]
    assert (part.partition_index, part.high_watermark, part.last_stable_offset) == (3, 10, 9)
    assert part.aborted_transactions is None
    assert isinstance(part.records, memoryview)
    assert part.records.obj is buf
    assert part.records == records
    assert resp.encode(4) == body


def test_produce_request_records_sent_as_own_chunk():
    big = bytes(range(256)) * 16
    req = ProduceRequest(
        acks=-1,
        timeout_ms=1000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name="t",
                partition_data=[
                    ProduceRequest.PartitionProduceData(index=0, records=big),
                    ProduceRequest.PartitionProduceData(index=1, records=b"small"),
                ],
            )
        ],
    )
    chunks = frame_request(req, 9, 5, "c")
    assert any(c is big for c in chunks)
    frame = joined(chunks)
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    assert headers.request_header_version(0, 9) == 2
    header_len = 2 + 2 + 4 + (2 + 1) + 1
    assert ProduceRequest.decode(frame[4 + header_len:], 9) == req


@pytest.mark.parametrize(
    "api_key, version, request_header, response_header",
    [
        (18, 0, 1, 0), (18, 3, 2, 0), (18, 4, 2, 0),   # ApiVersions: response header always v0
        (3, 8, 1, 0), (3, 9, 2, 1), (3, 12, 2, 1),      # Metadata flexible from v9
        (0, 8, 1, 0), (0, 9, 2, 1),                     # Produce flexible from v9
        (1, 11, 1, 0), (1, 12, 2, 1),                   # Fetch flexible from v12
    ],
)
def test_header_versions(api_key, version, request_header, response_header):
    assert headers.request_header_version(api_key, version) == request_header
    assert headers.response_header_version(api_key, version) == response_header


@pytest.mark.parametrize("header_version", [1, 2])
def test_request_header_matches_generated_class(header_version):
    api_key, api_version = {1: (3, 4), 2: (3, 12)}[header_version]
    fast = headers.encode_request_header(api_key, api_version, 99, "client-é")
    generic = RequestHeader(
        request_api_key=api_key, request_api_version=api_version, correlation_id=99,
        client_id="client-é",
    ).encode(header_version)
    assert fast == generic
    assert RequestHeader.decode(fast, header_version).correlation_id == 99


def test_by_name_and_api_keys():
    from kafka_fast.protocol import API_KEYS

    assert by_name("FetchResponse") is FetchResponse
    assert API_KEYS[3] == (MetadataRequest, by_name("MetadataResponse"))
    assert 18 in API_KEYS and 9999 not in API_KEYS
    assert len(API_KEYS) == 73
    for key, (req, resp) in API_KEYS.items():
        assert req.API_KEY == resp.API_KEY == key
    with pytest.raises(KeyError):
        by_name("NoSuchRequest")


def test_api_versions_unsupported_version_replies():
    from kafka_fast.protocol.compat import decode_api_versions_response

    # Kafka: a v0 body with UNSUPPORTED_VERSION and the ApiVersions range it supports.
    v0_reply = bytes.fromhex("0023" "00000001" "0012" "0000" "0002")
    resp = decode_api_versions_response(v0_reply, 3)
    assert resp.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [(18, 0, 2)]
    # librdkafka's mock cluster (2.16) answers a v3 request with a body fitting no version
    # (a one-byte count that is not a compact count, entries without tagged fields).
    mock_reply = bytes.fromhex("0023" "01" "0012" "0000" "0002" "00000000")
    resp = decode_api_versions_response(mock_reply, 3)
    assert (resp.error_code, resp.api_keys, resp.throttle_time_ms) == (35, [], 0)
    frame = bytes.fromhex("00000009") + mock_reply
    assert decode_response(frame, ApiVersionsResponse, 3)[1].error_code == 35
    with pytest.raises(ProtocolError):
        decode_api_versions_response(b"\x00\x00\x05", 3)
