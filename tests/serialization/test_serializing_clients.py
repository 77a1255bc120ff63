"""SerializingProducer and DeserializingConsumer on real brokers, against confluent-kafka's."""

from __future__ import annotations

import time

import confluent_kafka
import pytest
from confluent_kafka import serialization as ck
from harness.topics import create_topic, unique_topic

from kafka_fast import DeserializingConsumer, KafkaError, SerializingProducer, TopicPartition
from kafka_fast.error import (
    ConsumeError,
    KeySerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)
from kafka_fast.serialization import (
    DoubleDeserializer,
    IntegerDeserializer,
    IntegerSerializer,
    SerializationError,
    StringDeserializer,
    StringSerializer,
)

ROWS = [(f"k-{i}-ü", i * 1000 - 7) for i in range(50)] + [(None, -(2**31)), ("", 2**31 - 1)]


def _assign_all(consumer, topic: str) -> None:
    consumer.assign([TopicPartition(topic, 0, 0)])


def _poll_all(consumer, count: int, timeout: float = 30.0) -> list:
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None:
            out.append(msg)
    return out


def test_ours_write_confluent_reads(broker):
    topic = unique_topic("ser")
    create_topic(broker, topic, 1)
    producer = SerializingProducer(broker.client_config({
        "key.serializer": StringSerializer(), "value.serializer": IntegerSerializer()}))
    reports = []
    for key, value in ROWS:
        producer.produce(topic, key=key, value=value,
                         on_delivery=lambda err, msg: reports.append((err, msg.key())))
    assert producer.flush(30) == 0
    producer.close()
    assert [err for err, _ in reports] == [None] * len(ROWS)
    # The delivery report carries the serialized key.
    assert reports[0][1] == ROWS[0][0].encode()

    reader = confluent_kafka.DeserializingConsumer(broker.client_config({
        "group.id": unique_topic("g"), "key.deserializer": ck.StringDeserializer(),
        "value.deserializer": ck.IntegerDeserializer()}))
    reader.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    try:
        got = _poll_all(reader, len(ROWS))
    finally:
        reader.close()
    assert [(m.key(), m.value()) for m in got] == ROWS


def test_confluent_writes_ours_read(broker):
    topic = unique_topic("deser")
    create_topic(broker, topic, 1)
    writer = confluent_kafka.SerializingProducer(broker.client_config({
        "key.serializer": ck.StringSerializer(), "value.serializer": ck.DoubleSerializer()}))
    rows = [("a", 1.5), (None, -0.25), ("ß", 1e300)]
    for key, value in rows:
        writer.produce(topic, key=key, value=value)
    assert writer.flush(30) == 0

    consumer = DeserializingConsumer(broker.client_config({
        "group.id": unique_topic("g"), "key.deserializer": StringDeserializer(),
        "value.deserializer": DoubleDeserializer()}))
    _assign_all(consumer, topic)
    try:
        got = _poll_all(consumer, len(rows))
        assert [(m.key(), m.value(), m.offset()) for m in got] == [
            (k, v, i) for i, (k, v) in enumerate(rows)]
        with pytest.raises(NotImplementedError, match="use poll"):
            consumer.consume(1, 0.1)
    finally:
        consumer.close()


def test_serialization_failures_queue_nothing(broker):
    topic = unique_topic("serfail")
    create_topic(broker, topic, 1)
    producer = SerializingProducer(broker.client_config({
        "key.serializer": IntegerSerializer(), "value.serializer": StringSerializer()}))
    try:
        with pytest.raises(KeySerializationError) as info:
            producer.produce(topic, key=2**40, value="v")
        assert info.value.code == KafkaError._KEY_SERIALIZATION
        assert isinstance(info.value.exception, SerializationError)
        with pytest.raises(ValueSerializationError) as info:
            producer.produce(topic, key=1, value=b"not a str")
        assert info.value.code == KafkaError._VALUE_SERIALIZATION
        assert len(producer) == 0
        producer.produce(topic, key=1, value="ok")
        assert producer.flush(30) == 0
    finally:
        producer.close()
    with pytest.raises(RuntimeError, match="closed"):
        producer.produce(topic, key=1, value="late")


def test_deserialization_failure_keeps_the_raw_message(broker):
    topic = unique_topic("deserfail")
    create_topic(broker, topic, 1)
    writer = confluent_kafka.Producer(broker.client_config())
    writer.produce(topic, key=b"k", value=b"\x00\x01\x02")  # 3 bytes: not an int32
    writer.produce(topic, key=b"k2", value=b"\x00\x00\x00\x05")
    assert writer.flush(30) == 0
    consumer = DeserializingConsumer(broker.client_config({
        "group.id": unique_topic("g"), "value.deserializer": IntegerDeserializer(),
        "enable.partition.eof": True}))
    _assign_all(consumer, topic)
    try:
        deadline = time.monotonic() + 30
        error = None
        while error is None and time.monotonic() < deadline:
            try:
                consumer.poll(0.5)
            except ValueDeserializationError as exc:
                error = exc
        assert error is not None
        assert error.code == KafkaError._VALUE_DESERIALIZATION
        raw = error.kafka_message
        assert (raw.key(), raw.value(), raw.offset()) == (b"k", b"\x00\x01\x02", 0)
        msg = _poll_all(consumer, 1)[0]
        assert (msg.key(), msg.value(), msg.offset()) == (b"k2", 5, 1)
        # An error event (here: end of partition) is raised as ConsumeError.
        deadline = time.monotonic() + 30
        eof = None
        while eof is None and time.monotonic() < deadline:
            try:
                consumer.poll(0.5)
            except ConsumeError as exc:
                eof = exc
        assert eof is not None and eof.code == KafkaError._PARTITION_EOF
    finally:
        consumer.close()


def test_serializer_configuration_errors():
    with pytest.raises(TypeError, match="dict"):
        SerializingProducer([("bootstrap.servers", "x")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="value.serializer must be callable"):
        SerializingProducer({"bootstrap.servers": "127.0.0.1:1", "value.serializer": "utf8"})
    with pytest.raises(ValueError, match="key.deserializer.builder must have a build"):
        DeserializingConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g",
                               "key.deserializer.builder": object()})
    for client, conf in ((confluent_kafka.SerializingProducer, {}),
                         (SerializingProducer, {})):
        with pytest.raises(ValueError, match="Cannot configure both value.serializer and "
                                             "value.serializer.builder"):
            client({"bootstrap.servers": "127.0.0.1:1", "value.serializer": ck.StringSerializer(),
                    "value.serializer.builder": _Builder(ck.StringSerializer()), **conf})


class _Builder:
    """A serializer builder as the Schema Registry ones are: it takes its own settings out
    of the configuration and hands back the rest."""

    def __init__(self, serde, own: str = "x.custom.setting") -> None:
        self.serde, self.own, self.seen = serde, own, []

    def build(self, conf: dict, is_key: bool):
        self.seen.append((dict(conf), is_key))
        conf.pop(self.own, None)
        return self.serde, conf


class _Closing:
    """A serde that records its close() and the cluster-id resolver it is given."""

    def __init__(self, inner) -> None:
        self.inner, self.closed, self.resolver = inner, 0, None

    def __call__(self, obj, ctx):
        return self.inner(obj, ctx)

    def set_cluster_id_resolver(self, resolver) -> None:
        self.resolver = resolver

    def close(self) -> None:
        self.closed += 1


def test_builders_make_the_serdes_and_the_client_closes_only_those(broker):
    topic = unique_topic("serde-builder")
    create_topic(broker, topic, 1)
    built_key, built_value = _Closing(ck.StringSerializer()), _Closing(ck.IntegerSerializer())
    key_builder = _Builder(built_key, "key.custom.setting")
    value_builder = _Builder(built_value, "value.custom.setting")
    ready = _Closing(ck.StringSerializer())
    conf = broker.client_config({"key.serializer.builder": key_builder,
                                 "value.serializer.builder": value_builder,
                                 "key.custom.setting": 1, "value.custom.setting": 2})
    producer = SerializingProducer(conf)
    # each builder saw the whole configuration (the other's setting too) and whether it
    # builds the key's serde; the client got neither builder's own setting
    assert [(sorted(k for k in c if "custom" in k), is_key) for c, is_key in key_builder.seen] \
        == [(["key.custom.setting", "value.custom.setting"], True)]
    assert value_builder.seen[0][1] is False
    cluster_id = producer.cluster_id(10)
    assert cluster_id and built_key.resolver() == cluster_id == built_value.resolver()
    producer.produce(topic, key="k", value=42)
    assert producer.flush(10) == 0
    producer.close()
    producer.close()
    assert (built_key.closed, built_value.closed) == (1, 1)
    # ready-made serdes stay the application's
    with SerializingProducer(broker.client_config({"value.serializer": ready})) as p:
        p.produce(topic, value="v")
        assert p.flush(10) == 0
    assert ready.closed == 0

    built_de = _Closing(ck.IntegerDeserializer())
    consumer = DeserializingConsumer(broker.client_config({
        "group.id": unique_topic("g"), "auto.offset.reset": "earliest",
        "value.deserializer.builder": _Builder(built_de)}))
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        msg = consumer.poll(10)
        assert msg is not None and (msg.key(), msg.value()) == (b"k", 42)
    finally:
        consumer.close()
    assert built_de.closed == 1


def test_a_builder_returning_the_wrong_shape_is_named():
    class Broken:
        def build(self, conf, is_key):
            return "not a pair"

    with pytest.raises(ValueError, match="value.serializer.builder's build\\(\\) must return"):
        SerializingProducer({"bootstrap.servers": "127.0.0.1:1",
                             "value.serializer.builder": Broken()})
