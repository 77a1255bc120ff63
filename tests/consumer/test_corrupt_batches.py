"""A batch whose CRC does not match, stored by Tansu (which keeps produced batches as they
are): with ``check.crcs`` the records before it are delivered, one ``_BAD_MSG`` error names its
offset, nothing after it is delivered until the application seeks past it. Without
``check.crcs`` the altered record is delivered as stored."""

from __future__ import annotations

import time
from contextlib import closing

import pytest
from harness import create_topic, unique_topic
from raw_client import RawConnection

from kafka_fast import Consumer, KafkaError, KafkaException, TopicPartition
from kafka_fast.protocol import messages as m
from kafka_fast.records import encode_batch


def produce_raw(broker, topic: str, batch: bytes) -> int:
    """Write ``batch`` as is; returns its base offset."""
    host, port = broker.bootstrap.split(",")[0].rsplit(":", 1)
    R = m.ProduceRequest
    req = R(acks=-1, timeout_ms=5000, topic_data=[R.TopicProduceData(name=topic, partition_data=[
        R.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    with RawConnection(host, int(port)) as conn:
        part = conn.call(req, 9).responses[0].partition_responses[0]
    assert part.error_code == 0
    return part.base_offset


@pytest.fixture
def corrupt_topic(tansu):
    """Offsets 0-1 (v0, v1), 2-3 (v2, x3: the stored CRC is that of v2, v3), 4 (v4)."""
    topic = unique_topic("crc")
    create_topic(tansu, topic, 1)
    bad = bytearray(encode_batch([b"v2", b"v3"]))
    at = bytes(bad).index(b"v3")
    bad[at] = ord("x")
    offsets = [produce_raw(tansu, topic, encode_batch([b"v0", b"v1"])),
               produce_raw(tansu, topic, bytes(bad)),
               produce_raw(tansu, topic, encode_batch([b"v4"]))]
    assert offsets == [0, 2, 4]
    return tansu, topic


def settings(broker, check_crcs: bool) -> dict:
    return broker.client_config({"group.id": unique_topic("g"), "auto.offset.reset": "earliest",
                                 "check.crcs": check_crcs,
                                 "fetch.wait.max.ms": 50, "fetch.error.backoff.ms": 50})


def poll_for(consumer: Consumer, seconds: float) -> list:
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        msg = consumer.poll(0.1)
        if msg is not None:
            out.append(msg)
    return out


def test_poll_delivers_up_to_the_bad_batch_then_one_error(corrupt_topic):
    broker, topic = corrupt_topic
    with closing(Consumer(settings(broker, True))) as c:
        c.assign([TopicPartition(topic, 0, 0)])
        got = poll_for(c, 2.0)
        assert [(msg.offset(), msg.value()) for msg in got[:2]] == [(0, b"v0"), (1, b"v1")]
        assert len(got) == 3, got
        err = got[2].error()
        assert err.code() == KafkaError._BAD_MSG
        assert (got[2].topic(), got[2].partition(), got[2].offset()) == (topic, 0, 2)
        assert f"{topic} [0] at offset 2" in err.str() and "CRC" in err.str()
        assert c.position([TopicPartition(topic, 0)])[0].offset == 2
        c.seek(TopicPartition(topic, 0, 4))
        got = poll_for(c, 1.0)
        assert [(msg.offset(), msg.value()) for msg in got] == [(4, b"v4")]


def test_consume_batch_returns_the_records_then_raises(corrupt_topic):
    broker, topic = corrupt_topic
    with closing(Consumer(settings(broker, True))) as c:
        c.assign([TopicPartition(topic, 0, 0)])
        view = c.consume_batch(100, 5.0)
        assert view.offsets.tolist() == [0, 1]
        assert view.values.to_pylist() == [b"v0", b"v1"]
        with pytest.raises(KafkaException) as info:
            c.consume_batch(100, 2.0)
        assert info.value.args[0].code() == KafkaError._BAD_MSG
        assert len(c.consume_batch(100, 0.5)) == 0


def test_without_check_crcs_the_stored_records_are_delivered(corrupt_topic):
    broker, topic = corrupt_topic
    with closing(Consumer(settings(broker, False))) as c:
        c.assign([TopicPartition(topic, 0, 0)])
        got = poll_for(c, 1.5)
        assert [(msg.offset(), msg.value(), msg.error()) for msg in got] == [
            (0, b"v0", None), (1, b"v1", None), (2, b"v2", None), (3, b"x3", None),
            (4, b"v4", None)]
