"""AsyncSerializingProducer and AsyncDeserializingConsumer on real brokers, under asyncio and
uvloop: exact records read back, serializer and deserializer failures, and the same operations
done with confluent-kafka's ``confluent_kafka.aio`` clients on the same broker."""

from __future__ import annotations

import asyncio
import json
import time

import confluent_kafka
import confluent_kafka.aio as ck_aio
import pytest
from confluent_kafka import serialization as ck
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import Consumer, KafkaError, Producer, TopicPartition
from kafka_fast.aio import AsyncDeserializingConsumer, AsyncSerializingProducer
from kafka_fast.error import (
    ConsumeError,
    KeyDeserializationError,
    KeySerializationError,
    ValueDeserializationError,
    ValueSerializationError,
)
from kafka_fast.serialization import (
    IntegerDeserializer,
    IntegerSerializer,
    MessageField,
    SerializationError,
    StringDeserializer,
    StringSerializer,
)

#: (key, value, partition); a None value is a null record value
ROWS = ([(f"k-{i}-ü", {"n": i, "s": "x" * (i % 4)}, i % 2) for i in range(30)]
        + [(None, {"n": -1}, 0), ("", None, 1), ("last", {"n": 2**40}, 1)])


def _loop_factory(name: str):
    if name == "uvloop":
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


def run(main, loop: str = "asyncio"):
    with asyncio.Runner(loop_factory=_loop_factory(loop)) as runner:
        return runner.run(main())


class AsyncJsonSerializer:
    """An asyncio serializer: its call returns a coroutine, which suspends once."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []

    async def __call__(self, obj, ctx):
        self.seen.append((ctx.topic, ctx.field, ctx.headers))
        await asyncio.sleep(0)
        return None if obj is None else json.dumps(obj, sort_keys=True).encode()


def json_deserializer(data, ctx):
    """A plain (blocking) deserializer."""
    return None if data is None else json.loads(data)


def _expected(rows=ROWS) -> list[tuple]:
    """(partition, offset, key, value) of ``rows`` produced in order to an empty topic."""
    next_offset = {0: 0, 1: 0}
    out = []
    for key, value, partition in rows:
        out.append((partition, next_offset[partition], key, value))
        next_offset[partition] += 1
    return sorted(out)


async def _poll(consumer, count: int, timeout: float = 30.0) -> list:
    out: list = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        msg = await consumer.poll(0.5)
        if msg is not None:
            out.append(msg)
    return out


def _rows_of(msgs) -> list[tuple]:
    return sorted((m.partition(), m.offset(), m.key(), m.value()) for m in msgs)


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_round_trip_with_string_and_custom_serdes(real_broker, loop):
    topic = unique_topic("aio-ser")
    create_topic(real_broker, topic, 2)
    value_serializer = AsyncJsonSerializer()
    contexts: list[tuple] = []

    def value_deserializer(data, ctx):
        contexts.append((ctx.topic, ctx.field, ctx.headers))
        return json_deserializer(data, ctx)

    async def main():
        producer = await AsyncSerializingProducer(real_broker.client_config({
            "linger.ms": 2, "key.serializer": StringSerializer(),
            "value.serializer": value_serializer}))
        async with producer:
            futures = [await producer.produce(topic, key=key, value=value, partition=partition,
                                              headers=[("i", b"%d" % i)])
                       for i, (key, value, partition) in enumerate(ROWS)]
            delivered = await asyncio.gather(*futures)
        conf = real_broker.client_config({
            "group.id": unique_topic("g"), "key.deserializer": StringDeserializer(),
            "value.deserializer": value_deserializer})
        async with await AsyncDeserializingConsumer(conf) as consumer:
            await consumer.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
            got = await _poll(consumer, 10)
            deadline = time.monotonic() + 30
            while len(got) < len(ROWS) and time.monotonic() < deadline:
                got += await consumer.consume(len(ROWS) - len(got), 0.5)
        return delivered, got

    delivered, got = run(main, loop)
    expected = _expected()
    # The delivery reports: serialized key and value, at the expected partition and offset.
    assert sorted((m.partition(), m.offset(), m.key(), m.value()) for m in delivered) == [
        (p, o, None if k is None else k.encode(),
         None if v is None else json.dumps(v, sort_keys=True).encode())
        for p, o, k, v in expected]
    assert value_serializer.seen == [(topic, MessageField.VALUE, [("i", b"%d" % i)])
                                     for i in range(len(ROWS))]
    # Read back through the deserializers (poll, then consume): the exact rows and headers.
    assert [m.error() for m in got] == [None] * len(ROWS)
    assert _rows_of(got) == expected
    assert sorted((m.partition(), m.offset(), m.headers()) for m in got) == sorted(
        (m.partition(), m.offset(), [("i", b"%d" % i)]) for i, m in enumerate(delivered))
    assert all(m.deserialized_key() == m.key() and m.deserialized_value() == m.value()
               for m in got)
    assert sorted(contexts) == sorted((topic, MessageField.VALUE, m.headers()) for m in got)
    # An independent reader sees the same bytes.
    assert [(g.partition, g.offset, g.key, g.value) for g in read_confluent(
        real_broker, topic, 2, len(ROWS))] == [
        (m.partition(), m.offset(), m.key(), m.value())
        for m in sorted(delivered, key=lambda m: (m.partition(), m.offset()))]


def test_serializer_failures_raise_from_produce_and_produce_nothing(real_broker):
    topic = unique_topic("aio-serfail")
    create_topic(real_broker, topic, 1)
    values: list = []

    async def value_serializer(obj, ctx):
        values.append(obj)
        await asyncio.sleep(0)
        if obj == "bad":
            raise ValueError("no bad values")
        return obj.encode()

    async def main():
        producer = await AsyncSerializingProducer(real_broker.client_config({
            "key.serializer": IntegerSerializer(), "value.serializer": value_serializer}))
        async with producer:
            with pytest.raises(KeySerializationError) as key_error:
                await producer.produce(topic, key=2**40, value="never", partition=0)
            with pytest.raises(ValueSerializationError) as value_error:
                await producer.produce(topic, key=1, value="bad", partition=0)
            # refused before the serializers run
            with pytest.raises(TypeError, match="topic must be a str"):
                await producer.produce(b"topic", key=1, value="never")  # type: ignore[arg-type]
            assert len(producer) == 0
            delivered = await (await producer.produce(topic, key=2, value="good", partition=0))
        with pytest.raises(RuntimeError, match="closed"):
            await producer.produce(topic, key=3, value="never")
        return key_error.value, value_error.value, delivered

    key_error, value_error, delivered = run(main)
    assert key_error.code == KafkaError._KEY_SERIALIZATION
    assert isinstance(key_error.exception, SerializationError)
    assert value_error.code == KafkaError._VALUE_SERIALIZATION
    assert isinstance(value_error.exception, ValueError)
    assert str(value_error.exception) == "no bad values"
    # The value serializer never saw the record whose key failed, nor the refused ones.
    assert values == ["bad", "good"]
    # Nothing of the failed records reached the partition: the good one is its first record.
    assert (delivered.partition(), delivered.offset()) == (0, 0)
    reader = Consumer(real_broker.client_config({"group.id": unique_topic("g")}))
    try:
        assert reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 1)
    finally:
        reader.close()
    assert [(g.offset, g.key, g.value) for g in read_confluent(real_broker, topic, 1, 1)] == [
        (0, b"\x00\x00\x00\x02", b"good")]


def _write_raw(broker, topic: str) -> None:
    with Producer(broker.client_config()) as writer:
        writer.produce(topic, b"\x00\x00\x00\x05", b"k0", partition=0)
        writer.produce(topic, b"\x00\x01\x02", b"k1", partition=0)  # 3 bytes: not an int32
        writer.produce(topic, b"\x00\x00\x00\x07", b"\xff", partition=0)  # not UTF-8
        writer.produce(topic, b"\x00\x00\x00\x08", b"k3", partition=0)
        assert writer.flush(30) == 0


def test_deserializer_failures_raise_from_poll_with_the_raw_message(real_broker):
    topic = unique_topic("aio-deserfail")
    create_topic(real_broker, topic, 1)
    _write_raw(real_broker, topic)
    ints = IntegerDeserializer()

    async def value_deserializer(data, ctx):  # an asyncio deserializer
        await asyncio.sleep(0)
        return ints(data, ctx)

    async def main():
        conf = real_broker.client_config({
            "group.id": unique_topic("g"), "enable.partition.eof": True,
            "key.deserializer": StringDeserializer(), "value.deserializer": value_deserializer})
        outcomes: list = []
        async with await AsyncDeserializingConsumer(conf) as consumer:
            await consumer.assign([TopicPartition(topic, 0, 0)])
            while len(outcomes) < 5:
                try:
                    msg = await consumer.poll(10)
                except ConsumeError as exc:  # Key/ValueDeserializationError are ConsumeErrors
                    outcomes.append(exc)
                else:
                    assert msg is not None
                    outcomes.append(msg)
            # consume(): a failure raises too (the rest of that batch is not returned) ...
            await consumer.assign([TopicPartition(topic, 0, 1)])
            with pytest.raises(ValueDeserializationError) as in_batch:
                while True:
                    await consumer.consume(10, 10)
            # ... while error events are returned among the messages, not raised.
            await consumer.assign([TopicPartition(topic, 0, 3)])
            batch: list = []
            while not any(m.error() is not None for m in batch):
                batch += await consumer.consume(10, 10)
        return outcomes, in_batch.value, batch

    outcomes, in_batch, batch = run(main)
    ok0, value_failure, key_failure, ok3, eof = outcomes
    assert (ok0.offset(), ok0.key(), ok0.value()) == (0, "k0", 5)
    assert type(value_failure) is ValueDeserializationError
    assert value_failure.code == KafkaError._VALUE_DESERIALIZATION
    assert isinstance(value_failure.exception, SerializationError)
    raw = value_failure.kafka_message
    assert (raw.topic(), raw.partition(), raw.offset(), raw.key(), raw.value()) == (
        topic, 0, 1, b"k1", b"\x00\x01\x02")
    assert type(key_failure) is KeyDeserializationError
    assert key_failure.code == KafkaError._KEY_DESERIALIZATION
    raw = key_failure.kafka_message
    assert (raw.topic(), raw.partition(), raw.offset(), raw.key(), raw.value()) == (
        topic, 0, 2, b"\xff", b"\x00\x00\x00\x07")
    assert (ok3.offset(), ok3.key(), ok3.value()) == (3, "k3", 8)
    # An error event raises ConsumeError from poll().
    assert type(eof) is ConsumeError and eof.code == KafkaError._PARTITION_EOF
    raw = in_batch.kafka_message
    assert (raw.topic(), raw.partition(), raw.offset(), raw.value()) == (
        topic, 0, 1, b"\x00\x01\x02")
    assert [(m.offset(), m.key(), m.value()) for m in batch if m.error() is None] == [
        (3, "k3", 8)]
    assert [m.error().code() for m in batch if m.error() is not None] == [
        KafkaError._PARTITION_EOF]


# -- the same operations with confluent-kafka's asyncio clients ------------------------------

async def _produce_rows(producer, topic: str) -> list[tuple]:
    futures = [await producer.produce(topic, key=key, value=value, partition=partition)
               for key, value, partition in ROWS]
    await producer.flush()
    delivered = await asyncio.gather(*futures)
    await producer.close()
    return sorted((m.partition(), m.offset()) for m in delivered)


async def _read_rows(consumer, topic: str, tp) -> list[tuple]:
    await consumer.assign([tp(topic, p, 0) for p in (0, 1)])
    got = await _poll(consumer, len(ROWS))
    await consumer.close()
    return _rows_of(got)


def _their_producer(broker, extra=None):
    return ck_aio.AsyncSerializingProducer(broker.client_config({
        "linger.ms": 2, "key.serializer": ck.StringSerializer(),
        "value.serializer": AsyncJsonSerializer(), **(extra or {})}))


def _our_producer(broker, extra=None):
    return AsyncSerializingProducer(broker.client_config({
        "linger.ms": 2, "key.serializer": StringSerializer(),
        "value.serializer": AsyncJsonSerializer(), **(extra or {})}))


def _their_consumer(broker, extra=None):
    return ck_aio.AsyncDeserializingConsumer(broker.client_config({
        "group.id": unique_topic("g"), "key.deserializer": ck.StringDeserializer(),
        "value.deserializer": json_deserializer, **(extra or {})}))


def _our_consumer(broker, extra=None):
    return AsyncDeserializingConsumer(broker.client_config({
        "group.id": unique_topic("g"), "key.deserializer": StringDeserializer(),
        "value.deserializer": json_deserializer, **(extra or {})}))


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_confluent_and_kafka_fast_asyncio_clients_read_each_others_records(real_broker, loop):
    """Each writes the same rows to a topic of its own; each reads both topics."""
    theirs, ours = unique_topic("aio-ck"), unique_topic("aio-kf")
    for topic in (theirs, ours):
        create_topic(real_broker, topic, 2)

    async def main():
        written = {
            theirs: await _produce_rows(await _their_producer(real_broker), theirs),
            ours: await _produce_rows(await _our_producer(real_broker), ours),
        }
        read = {}
        for topic in (theirs, ours):
            read[topic, "confluent"] = await _read_rows(
                await _their_consumer(real_broker), topic, confluent_kafka.TopicPartition)
            read[topic, "kafka_fast"] = await _read_rows(
                await _our_consumer(real_broker), topic, TopicPartition)
        return written, read

    written, read = run(main, loop)
    expected = _expected()
    assert written == {topic: [(p, o) for p, o, _, _ in expected] for topic in (theirs, ours)}
    assert read == {(topic, reader): expected for topic in (theirs, ours)
                    for reader in ("confluent", "kafka_fast")}
    # The records on the broker are the same bytes whichever client wrote them.
    their_bytes, our_bytes = ([g[:5] for g in read_confluent(real_broker, topic, 2, len(ROWS))]
                              for topic in (theirs, ours))
    assert their_bytes == our_bytes
    assert [(p, o, k) for p, o, k, _, _ in our_bytes] == [
        (p, o, None if k is None else k.encode()) for p, o, k, _ in expected]


#: the serialization errors of both libraries (each library's errors derive from its own)
EITHER = (SerializationError, ck.SerializationError)


def test_confluent_and_kafka_fast_asyncio_clients_fail_alike(real_broker):
    """A serializer failure raises the same error from both producers and writes nothing; a
    deserializer failure raises the same error, holding the same raw message, from both
    consumers."""
    topic = unique_topic("aio-fail-alike")
    create_topic(real_broker, topic, 1)

    async def serializing_failure(make_producer, integers) -> tuple:
        producer = await make_producer(real_broker, {"key.serializer": integers})
        try:
            with pytest.raises(EITHER) as key_error:  # not an int32
                await producer.produce(topic, key=2**40, value={"n": 1}, partition=0)
            with pytest.raises(EITHER) as value_error:  # a set is not JSON
                await producer.produce(topic, key=1, value={"n": {1, 2}}, partition=0)
        finally:
            await producer.close()
        return tuple((type(e.value).__name__, e.value.code, type(e.value.exception).__name__)
                     for e in (key_error, value_error))

    async def deserializing_failure(make_consumer, tp) -> tuple:
        consumer = await make_consumer(real_broker, {"value.deserializer": ints})
        try:
            await consumer.assign([tp(topic, 0, 0)])
            first = await consumer.poll(10)  # the failed records left nothing before it
            assert (first.offset(), first.value()) == (0, 5)
            with pytest.raises(EITHER) as info:
                await consumer.poll(10)
            assert (await consumer.poll(10)).offset() == 2
        finally:
            await consumer.close()
        raw = info.value.kafka_message
        return (type(info.value).__name__, info.value.code, raw.topic(), raw.partition(),
                raw.offset(), raw.key(), raw.value())

    def ints(data, ctx):
        if len(data) != 4:
            raise ValueError(f"{len(data)} bytes is no int32")
        return int.from_bytes(data, "big", signed=True)

    async def main():
        failed = [await serializing_failure(_their_producer, ck.IntegerSerializer()),
                  await serializing_failure(_our_producer, IntegerSerializer())]
        # a difference: confluent-kafka's asyncio producer refuses headers (kafka_fast's
        # produces them: test_round_trip_with_string_and_custom_serdes)
        producer = await _their_producer(real_broker)
        with pytest.raises(NotImplementedError):
            await producer.produce(topic, key="k", value={}, partition=0, headers=[("h", b"")])
        await producer.close()
        with Producer(real_broker.client_config()) as writer:
            for value in (b"\x00\x00\x00\x05", b"\x01\x02", b"\x00\x00\x00\x07"):
                writer.produce(topic, value, b"k", partition=0)
            assert writer.flush(30) == 0
        read = [await deserializing_failure(_their_consumer, confluent_kafka.TopicPartition),
                await deserializing_failure(_our_consumer, TopicPartition)]
        return failed, read

    (their_failed, our_failed), (their_read, our_read) = run(main)
    assert their_failed == our_failed == (
        ("KeySerializationError", KafkaError._KEY_SERIALIZATION, "SerializationError"),
        ("ValueSerializationError", KafkaError._VALUE_SERIALIZATION, "TypeError"))
    assert their_read == our_read == (
        "ValueDeserializationError", KafkaError._VALUE_DESERIALIZATION, topic, 0, 1, b"k",
        b"\x01\x02")


# -- builders, the cluster id, closing ---------------------------------------------------------

class AsyncSerde:
    """An asyncio serde as the Schema Registry ones are: an awaited call, ``aclose()`` and the
    asyncio cluster-id resolver."""

    def __init__(self, inner) -> None:
        self.inner, self.closed, self.resolver, self.blocking_resolver = inner, 0, None, None
        self.fields: list = []

    async def __call__(self, obj, ctx):
        self.fields.append(ctx.field)
        await asyncio.sleep(0)
        return self.inner(obj, ctx)

    def set_async_cluster_id_resolver(self, resolver) -> None:
        self.resolver = resolver

    def set_cluster_id_resolver(self, resolver) -> None:  # not offered by asyncio clients
        self.blocking_resolver = resolver

    async def aclose(self) -> None:
        self.closed += 1


class BlockingSerde:
    """A serde with a plain ``close()``."""

    def __init__(self, inner) -> None:
        self.inner, self.closed, self.fields = inner, 0, []

    def __call__(self, obj, ctx):
        self.fields.append(ctx.field)
        return self.inner(obj, ctx)

    def close(self) -> None:
        self.closed += 1


class Builder:
    """Takes its own setting out of the configuration and hands back the rest; with
    ``awaited``, ``build()`` returns a coroutine (as the asyncio Schema Registry builders')."""

    def __init__(self, serde, own: str, awaited: bool) -> None:
        self.serde, self.own, self.awaited, self.seen = serde, own, awaited, []

    def build(self, conf: dict, is_key: bool):
        self.seen.append((sorted(k for k in conf if "custom" in k), is_key))
        conf.pop(self.own, None)
        if not self.awaited:
            return self.serde, conf

        async def built():
            await asyncio.sleep(0)
            return self.serde, conf

        return built()


class CountingProducer(AsyncSerializingProducer):
    """Counts the cluster-id look-ups (the resolver given to the serdes calls this method)."""

    look_ups = 0

    async def cluster_id(self, timeout=-1):
        CountingProducer.look_ups += 1
        return await super().cluster_id(timeout)


def test_builders_make_the_serdes_which_get_the_cluster_id_and_are_closed(real_broker):
    topic = unique_topic("aio-builders")
    create_topic(real_broker, topic, 1)
    key_serde, value_serde = AsyncSerde(StringSerializer()), AsyncSerde(IntegerSerializer())
    key_builder = Builder(key_serde, "key.custom.setting", awaited=True)
    value_builder = Builder(value_serde, "value.custom.setting", awaited=False)
    ready = AsyncSerde(StringSerializer())
    deserializer = BlockingSerde(IntegerDeserializer())

    async def main():
        CountingProducer.look_ups = 0
        pending = CountingProducer(real_broker.client_config({
            "key.serializer.builder": key_builder, "value.serializer.builder": value_builder,
            "key.custom.setting": 1, "value.custom.setting": 2}))
        assert asyncio.iscoroutine(pending)  # created by awaiting
        producer = await pending
        # Six tasks at once share one look-up; the id is not kept, the next call looks again.
        resolved = await asyncio.gather(key_serde.resolver(),
                                        *(value_serde.resolver() for _ in range(5)))
        shared = CountingProducer.look_ups
        resolved.append(await key_serde.resolver())
        look_ups = (shared, CountingProducer.look_ups)
        cluster_id = await producer.cluster_id(10)
        delivered = await (await producer.produce(topic, key="k", value=42, partition=0))
        await producer.close()
        await producer.close()
        async with await AsyncSerializingProducer(real_broker.client_config({
                "value.serializer": ready})) as other:
            await (await other.produce(topic, value="v", partition=0))
        conf = real_broker.client_config({"group.id": unique_topic("g"),
                                          "value.deserializer.builder": Builder(
                                              deserializer, "x.custom.setting", True)})
        async with await AsyncDeserializingConsumer(conf) as consumer:
            await consumer.assign([TopicPartition(topic, 0, 0)])
            msg = await consumer.poll(10)
            # the columnar calls hand out the raw bytes
            await consumer.assign([TopicPartition(topic, 0, 0)])
            raw: list = []
            while len(raw) < 2:
                raw += (await consumer.consume_batch(10, 10.0)).values.to_pylist()
        return cluster_id, resolved, look_ups, delivered, msg, raw

    cluster_id, resolved, look_ups, delivered, msg, raw = run(main)
    # Each builder saw the whole configuration and whether it builds the key's serde; the
    # client got neither builder's own setting (it would have refused it).
    assert key_builder.seen == [(["key.custom.setting", "value.custom.setting"], True)]
    assert value_builder.seen == [(["key.custom.setting", "value.custom.setting"], False)]
    with Producer(real_broker.client_config()) as sync_producer:
        assert cluster_id and cluster_id == sync_producer.cluster_id(10)
    assert resolved == [cluster_id] * 7
    assert look_ups == (1, 2)
    assert key_serde.blocking_resolver is None
    assert (delivered.offset(), delivered.key(), delivered.value()) == (
        0, b"k", b"\x00\x00\x00\x2a")
    assert (msg.offset(), msg.key(), msg.value()) == (0, b"k", 42)
    assert raw == [b"\x00\x00\x00\x2a", b"v"]
    assert (key_serde.fields, value_serde.fields, deserializer.fields) == (
        [MessageField.KEY], [MessageField.VALUE], [MessageField.VALUE])
    # Built serdes are closed once (aclose(), else close()); ready-made ones stay open.
    assert (key_serde.closed, value_serde.closed, deserializer.closed) == (1, 1, 1)
    assert ready.closed == 0


@pytest.mark.parametrize("client", [AsyncSerializingProducer, ck_aio.AsyncSerializingProducer])
def test_a_serializer_and_its_builder_together_are_refused(client):
    async def main():
        await client({"bootstrap.servers": "127.0.0.1:1", "value.serializer": AsyncJsonSerializer(),
                      "value.serializer.builder": Builder(None, "x", False)})

    with pytest.raises(ValueError, match="Cannot configure both value.serializer and "
                                         "value.serializer.builder"):
        run(main)


def test_the_classes_are_not_generic_unlike_confluent_kafkas():
    assert ck_aio.AsyncSerializingProducer[str, int] is not None
    assert ck_aio.AsyncDeserializingConsumer[str, int] is not None
    for ours in (AsyncSerializingProducer, AsyncDeserializingConsumer):
        with pytest.raises(TypeError):
            ours[str, int]  # type: ignore[index]
