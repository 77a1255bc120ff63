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
    with pytest.raises(ValueError, match="key.deserializer.builder is not supported"):
        DeserializingConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g",
                               "key.deserializer.builder": object()})
