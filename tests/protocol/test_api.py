"""The generated classes' public surface: constructors, defaults, nesting, errors."""

from __future__ import annotations

import uuid

import pytest

from kafka_fast.errors import KafkaException, ProtocolError
from kafka_fast.protocol import messages
from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    ConsumerGroupHeartbeatResponse,
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    RequestHeader,
)


def test_class_constants():
    # Kafka 4 dropped Produce v0-2 (KIP-896); 4.4's schemas go to v13.
    assert (ProduceRequest.API_KEY, ProduceRequest.MIN_VERSION) == (0, 3)
    assert ProduceRequest.MAX_VERSION >= 13
    assert ProduceRequest.FLEXIBLE_MIN == 9
    assert MetadataResponse.FLEXIBLE_MIN == 9
    assert RequestHeader.API_KEY is None and RequestHeader.FLEXIBLE_MIN == 2
    assert messages.ConsumerProtocolSubscription.FLEXIBLE_MIN is None


def test_nested_classes_reachable_by_path_and_by_name():
    inner = ProduceRequest.TopicProduceData.PartitionProduceData
    assert ProduceRequest.PartitionProduceData is inner
    assert inner.__qualname__ == "ProduceRequest.TopicProduceData.PartitionProduceData"
    assert MetadataRequest.MetadataRequestTopic.__qualname__ == "MetadataRequest.MetadataRequestTopic"
    # commonStructs hang off the message class
    assert FetchResponse.FetchableTopicResponse.PartitionData.LeaderIdAndEpoch is not None
    assert ConsumerGroupHeartbeatResponse.TopicPartitions is not None


def test_schema_defaults():
    assert FetchRequest().max_bytes == 0x7FFFFFFF          # "0x7fffffff"
    assert FetchRequest().replica_id == -1                 # "-1"
    assert FetchRequest().cluster_id is None               # "null" string
    assert MetadataRequest().allow_auto_topic_creation is True
    assert MetadataResponse.MetadataResponseTopic().topic_authorized_operations == -2147483648
    assert MetadataRequest().topics == []
    assert MetadataRequest.MetadataRequestTopic().topic_id == uuid.UUID(int=0)
    assert ProduceRequest.PartitionProduceData().records is None
    assert ConsumerGroupHeartbeatResponse().assignment is None          # nullable struct
    leader = FetchResponse.FetchableTopicResponse.PartitionData().current_leader
    assert (leader.leader_id, leader.leader_epoch) == (-1, -1)         # struct default


def test_mutable_defaults_are_not_shared():
    a, b = MetadataRequest(), MetadataRequest()
    a.topics.append(MetadataRequest.MetadataRequestTopic(name="x"))
    assert b.topics == []


def test_constructor_is_keyword_only_and_checks_names():
    with pytest.raises(TypeError):
        MetadataRequest([])  # type: ignore[misc]
    with pytest.raises(TypeError):
        MetadataRequest(topicz=[])  # type: ignore[call-arg]


def test_fields_absent_from_a_version_decode_to_defaults():
    P = ProduceResponse
    resp = P(responses=[P.TopicProduceResponse(name="t", partition_responses=[
        P.PartitionProduceResponse(index=2, base_offset=77, log_start_offset=5)])])
    decoded = P.decode(resp.encode(4), 4)  # log_start_offset exists from v5
    part = decoded.responses[0].partition_responses[0]
    assert (part.index, part.base_offset, part.log_start_offset) == (2, 77, -1)
    assert part.record_errors == [] and part.error_message is None


def test_equality_and_repr():
    a = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="t")])
    b = MetadataRequest.decode(a.encode(12), 12)
    assert a == b and not (a != b)
    b.topics[0].name = "u"
    assert a != b
    assert repr(a) == "MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name='t')])"
    assert MetadataRequest() != ApiVersionsRequest()


def test_encode_rejects_null_for_non_nullable_field():
    req = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=None)])
    assert MetadataRequest.decode(req.encode(10), 10) == req  # nullable from v10
    with pytest.raises(ProtocolError, match=r"MetadataRequest v9: cannot encode "
                       r"MetadataRequestTopic.name: None is not allowed"):
        req.encode(9)


def test_encode_rejects_out_of_range_and_wrong_types():
    with pytest.raises(ProtocolError, match="PartitionProduceData.index"):
        ProduceRequest(topic_data=[ProduceRequest.TopicProduceData(partition_data=[
            ProduceRequest.PartitionProduceData(index=2**31)])]).encode(9)
    with pytest.raises(ProtocolError, match="ProduceRequest.acks"):
        ProduceRequest(acks="all").encode(3)  # type: ignore[arg-type]


def test_encode_refuses_to_drop_a_non_ignorable_field():
    with pytest.raises(ProtocolError, match=r"allow_auto_topic_creation=False.*versions 4\+"):
        MetadataRequest(allow_auto_topic_creation=False).encode(3)
    MetadataRequest(allow_auto_topic_creation=True).encode(3)  # the default is fine


def test_protocol_error_is_a_kafka_exception():
    with pytest.raises(KafkaException) as info:
        FetchResponse.decode(b"\x00", 4)
    assert info.value.args[0].code() == -199  # _BAD_MSG


def test_decode_from_reports_the_end_offset():
    body = MetadataRequest(topics=None).encode(1)
    obj, end = MetadataRequest.decode_from(b"xx" + body + b"tail", 1, 2)
    assert (obj.topics, end) == (None, 2 + len(body))


def test_decode_accepts_bytearray_and_memoryview():
    body = ProduceRequest(acks=1, timeout_ms=5).encode(9)
    for buf in (body, bytearray(body), memoryview(body), memoryview(bytearray(body))):
        assert ProduceRequest.decode(buf, 9).timeout_ms == 5
