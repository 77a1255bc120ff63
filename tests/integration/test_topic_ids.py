"""Produce v13 and Fetch v13+ name topics by ID (KIP-516) where the broker serves them.

On Apache Kafka 4.4.0 (Produce up to v13, Fetch up to v18) and the default broker, a relaying
proxy captures the request frames: the versions are the highest both sides speak, and from
v13 on the frames carry the topic's ID from metadata, not its name. Records are read back
with confluent-kafka. A topic deleted and created again under a consumer is not read from
at the old position: the consumer reports it and starts again by auto.offset.reset.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import TopicCollection
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import AdminClient
from harness.apache_kafka import ApacheKafka, require_apache_kafka, start_apache_kafka
from harness.hostile_proxy import HostileProxy
from harness.probe import api_versions

import kafka_fast
from kafka_fast import KafkaError, TopicPartition

pytestmark = [pytest.mark.apache, pytest.mark.timeout(300)]

PRODUCE, FETCH = 0, 1


@pytest.fixture(scope="module")
def kafka44(tmp_path_factory) -> Iterator[ApacheKafka]:
    require_apache_kafka("4.4.0")
    cluster = start_apache_kafka(tmp_path_factory.mktemp("kafka44"), version="4.4.0")
    try:
        yield cluster
    finally:
        cluster.discard()


@pytest.fixture(params=["4.4.0", "default"])
def id_broker(request, kafka44, kafka):
    if request.param == "4.4.0":
        return kafka44
    if kafka.kind != "kafka":
        pytest.skip("needs Apache Kafka")
    return kafka


def _address(broker) -> tuple[str, int]:
    host, port = broker.bootstrap.split(",")[0].rsplit(":", 1)
    return host, int(port)


def _topic_id(broker, topic: str) -> uuid.UUID:
    """The topic's ID as confluent-kafka describes it."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result(20)
    mask = (1 << 64) - 1
    tid = desc.topic_id
    return uuid.UUID(int=((tid.get_most_significant_bits() & mask) << 64)
                     | (tid.get_least_significant_bits() & mask))


def _read_back(bootstrap: str, topic: str, count: int) -> list[tuple[int, bytes]]:
    consumer = CKConsumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex,
                           "enable.auto.commit": False})
    try:
        consumer.assign([CKTopicPartition(topic, 0, 0)])
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.offset(), msg.value()))
        return got
    finally:
        consumer.close()


def test_requests_name_topics_by_id_where_the_broker_serves_it(id_broker):
    broker = id_broker
    host, port = _address(broker)
    served = api_versions(host, port)
    want_produce = min(13, served[PRODUCE][1])
    want_fetch = min(18, served[FETCH][1])
    topic = f"ids-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, 1)
    values = [b"v%d" % i for i in range(20)]
    with HostileProxy([(host, port)]) as proxy:
        proxy.capture.update({PRODUCE, FETCH})
        producer = kafka_fast.Producer({"bootstrap.servers": proxy.bootstrap, "linger.ms": 5})
        reports: list = []
        for v in values:
            producer.produce(topic, v, partition=0,
                             on_delivery=lambda err, msg: reports.append((err, msg.offset())))
        assert producer.flush(30) == 0
        assert reports == [(None, i) for i in range(20)]
        consumer = kafka_fast.Consumer({"bootstrap.servers": proxy.bootstrap,
                                        "group.id": uuid.uuid4().hex,
                                        "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            got = []
            deadline = time.monotonic() + 30
            while len(got) < 20 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append((msg.offset(), msg.value()))
        finally:
            consumer.close()
        frames = list(proxy.captured)
    assert got == list(enumerate(values))
    assert _read_back(broker.bootstrap, topic, 20) == list(enumerate(values))
    topic_id = _topic_id(broker, topic).bytes
    name = topic.encode()
    produce = [(v, f) for k, v, f in frames if k == PRODUCE]
    fetch = [(v, f) for k, v, f in frames if k == FETCH]
    assert produce and fetch
    assert {v for v, _ in produce} == {want_produce}
    assert {v for v, _ in fetch} == {want_fetch}
    for version, frame in produce + fetch:
        if version >= 13:
            assert topic_id in frame and name not in frame
        else:
            assert name in frame and topic_id not in frame


def _recreate(broker, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 60
    while True:
        try:
            broker.create_topic(topic, 1, 1)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_a_recreated_topic_is_not_read_at_the_old_position(id_broker):
    """The consumer read 5 records of the first topic; the topic is deleted and created
    again with 8 records. Named by name alone, a Fetch at offset 5 would return the new
    topic's records 5..7 as if nothing happened; here the consumer reports the new topic ID
    and starts again at the beginning (auto.offset.reset=earliest)."""
    broker = id_broker
    topic = f"recreated-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, 1)
    producer = kafka_fast.Producer({"bootstrap.servers": broker.bootstrap})
    first = [b"old-%d" % i for i in range(5)]
    for v in first:
        producer.produce(topic, v, partition=0)
    assert producer.flush(30) == 0
    consumer = kafka_fast.Consumer({"bootstrap.servers": broker.bootstrap,
                                    "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                                    "auto.offset.reset": "earliest",
                                    "metadata.max.age.ms": 2000})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append((msg.offset(), msg.value()))
        assert got == list(enumerate(first))
        _recreate(broker, topic)
        second = [b"new-%d" % i for i in range(8)]
        writer = kafka_fast.Producer({"bootstrap.servers": broker.bootstrap})
        for v in second:
            writer.produce(topic, v, partition=0)
        assert writer.flush(30) == 0
        records, errors = [], []
        deadline = time.monotonic() + 60
        while len(records) < 8 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(msg.error())
            else:
                records.append((msg.offset(), msg.value()))
        assert records == list(enumerate(second))
        recreated = [e for e in errors if e.code() == KafkaError.UNKNOWN_TOPIC_ID]
        assert recreated and "deleted and created again" in recreated[0].str()
    finally:
        consumer.close()
        producer.flush(0)


def test_a_producer_with_stale_metadata_writes_to_the_topic_now_named(id_broker):
    """The producer's metadata still names the deleted topic's ID: Produce v13 is answered
    UNKNOWN_TOPIC_ID (nothing written), metadata is fetched again and the record goes to the
    new topic, as librdkafka does; by name (v12) the broker resolves the name itself."""
    broker = id_broker
    topic = f"stale-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1, 1)
    producer = kafka_fast.Producer({"bootstrap.servers": broker.bootstrap})
    reports: list = []

    def report(err, msg) -> None:
        reports.append((err, msg.value(), msg.offset()))

    try:
        producer.produce(topic, b"first", partition=0, on_delivery=report)
        assert producer.flush(30) == 0
        _recreate(broker, topic)
        producer.produce(topic, b"second", partition=0, on_delivery=report)
        assert producer.flush(60) == 0
    finally:
        producer.flush(0)
    assert reports == [(None, b"first", 0), (None, b"second", 0)]
    assert _read_back(broker.bootstrap, topic, 1) == [(0, b"second")]


def test_a_batch_that_may_be_in_the_old_topic_is_not_written_to_the_new_one(kafka44):
    """The answer to a Produce is lost (a proxy swallows it, so the record is in the first
    topic); the topic is deleted and created again before the retry. The retry, by the old
    ID, is refused (UNKNOWN_TOPIC_ID); metadata then names another ID, and the batch fails
    with an error saying so instead of being written into the new topic."""
    host, port = _address(kafka44)
    topic = f"doubt-{uuid.uuid4().hex[:8]}"
    kafka44.create_topic(topic, 1, 1)
    reports: list = []
    with HostileProxy([(host, port)]) as proxy:
        producer = kafka_fast.Producer({"bootstrap.servers": proxy.bootstrap,
                                        "request.timeout.ms": 25000,
                                        "message.timeout.ms": 120000})
        try:
            producer.produce(topic, b"first", partition=0,
                             on_delivery=lambda err, msg: reports.append((err, msg.value())))
            assert producer.flush(30) == 0
            proxy.inject(PRODUCE, "stall")
            producer.produce(topic, b"doubt", partition=0,
                             on_delivery=lambda err, msg: reports.append((err, msg.value())))
            deadline = time.monotonic() + 20
            while proxy.applied[(PRODUCE, "stall")] == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert proxy.applied[(PRODUCE, "stall")] == 1
            _recreate(kafka44, topic)
            assert producer.flush(90) == 0
        finally:
            producer.flush(0)
    assert [(r[0] is None, r[1]) for r in reports] == [(True, b"first"), (False, b"doubt")]
    err = reports[1][0]
    assert err.code() == KafkaError.UNKNOWN_TOPIC_ID
    assert "deleted and created again" in err.str()
    assert _read_back(kafka44.bootstrap, topic, 1) == []
