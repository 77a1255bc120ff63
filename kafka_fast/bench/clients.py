"""One function per (client, path): produce or consume N records, measured.

Peers are optional: a path whose client is not installed is skipped by the runner.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from .payload import Payload
from .result import Result, Stopwatch


@dataclass
class Target:
    """Where and how to run: bootstrap, topic, partitions, compression, acks."""

    bootstrap: str
    topic: str
    partitions: int
    compression: str
    acks: str
    timeout_s: float = 300.0


def _result(client: str, path: str, direction: str, n: int, nbytes: int, sw: Stopwatch,
            error: str = "") -> Result:
    wall, cpu = sw.stop()
    return Result(client, path, direction, n, nbytes, wall, cpu, error)


# ---- kafka_fast ---------------------------------------------------------------------------

def _kf_producer(t: Target):
    from .. import Producer

    return Producer({"bootstrap.servers": t.bootstrap, "acks": t.acks, "linger.ms": 5,
                     "compression.type": t.compression,
                     "queue.buffering.max.messages": 2_000_000,
                     "queue.buffering.max.kbytes": 2_097_152})


def _flush_checked(producer, failures: list, t: Target) -> str:
    left = producer.flush(t.timeout_s)
    if left:
        return f"{left} records not delivered"
    return f"{len(failures)} delivery failures: {failures[0]}" if failures else ""


def kafka_fast_produce_loop(t: Target, p: Payload) -> Result:
    values, keys = p.as_bytes_lists()
    producer = _kf_producer(t)
    failures: list = []
    producer.list_topics(t.topic, timeout=30)
    sw = Stopwatch().start()
    produce, poll, topic = producer.produce, producer.poll, t.topic
    for i in range(len(values)):
        while True:
            try:
                produce(topic, values[i], keys[i])
                break
            except BufferError:
                poll(0.05)
    error = _flush_checked(producer, failures, t)
    result = _result("kafka_fast", "produce()", "produce", len(p), p.nbytes, sw, error)
    producer.close()
    return result


def kafka_fast_produce_batch(t: Target, p: Payload) -> Result:
    producer = _kf_producer(t)
    failures: list = []
    producer.list_topics(t.topic, timeout=30)
    sw = Stopwatch().start()
    step = 100_000
    for start in range(0, len(p), step):
        stop = start + step
        while True:
            try:
                producer.produce_batch(t.topic, p.values[start:stop], keys=p.keys[start:stop])
                break
            except BufferError:
                producer.poll(0.05)
    error = _flush_checked(producer, failures, t)
    result = _result("kafka_fast", "produce_batch", "produce", len(p), p.nbytes, sw, error)
    producer.close()
    return result


def _kf_consumer(t: Target):
    from .. import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": t.bootstrap, "group.id": "kafka-fast-bench",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(t.topic, i, OFFSET_BEGINNING) for i in range(t.partitions)])
    return consumer


def _drain(n: int, t: Target, take: Callable[[], int]) -> str:
    got = 0
    import time

    deadline = time.monotonic() + t.timeout_s
    while got < n and time.monotonic() < deadline:
        got += take()
    return "" if got >= n else f"read {got} of {n} records"


def kafka_fast_poll(t: Target, p: Payload) -> Result:
    consumer = _kf_consumer(t)
    sw = Stopwatch().start()

    def take() -> int:
        msg = consumer.poll(1.0)
        return 1 if msg is not None and msg.error() is None else 0

    error = _drain(len(p), t, take)
    result = _result("kafka_fast", "poll()", "consume", len(p), p.nbytes, sw, error)
    consumer.close()
    return result


def kafka_fast_consume(t: Target, p: Payload) -> Result:
    consumer = _kf_consumer(t)
    sw = Stopwatch().start()

    def take() -> int:
        return sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)

    error = _drain(len(p), t, take)
    result = _result("kafka_fast", "consume(10000)", "consume", len(p), p.nbytes, sw, error)
    consumer.close()
    return result


def kafka_fast_consume_batch(t: Target, p: Payload) -> Result:
    consumer = _kf_consumer(t)
    sw = Stopwatch().start()
    error = _drain(len(p), t, lambda: len(consumer.consume_batch(100_000, 1.0)))
    result = _result("kafka_fast", "consume_batch", "consume", len(p), p.nbytes, sw, error)
    consumer.close()
    return result


# ---- confluent-kafka (librdkafka) ------------------------------------------------------------

def _ck_producer(t: Target):
    import confluent_kafka

    return confluent_kafka.Producer({
        "bootstrap.servers": t.bootstrap, "acks": t.acks, "linger.ms": 5,
        "compression.type": t.compression, "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_097_152, "batch.size": 1_000_000})


def confluent_produce_loop(t: Target, p: Payload) -> Result:
    values, keys = p.as_bytes_lists()
    producer = _ck_producer(t)
    producer.list_topics(t.topic, timeout=30)
    failures: list = []
    sw = Stopwatch().start()
    produce, poll, topic = producer.produce, producer.poll, t.topic
    for i in range(len(values)):
        while True:
            try:
                produce(topic, values[i], keys[i])
                break
            except BufferError:
                poll(0.05)
        if i % 10_000 == 0:
            poll(0)
    error = _flush_checked(producer, failures, t)
    return _result("confluent", "produce()", "produce", len(p), p.nbytes, sw, error)


def confluent_produce_batch(t: Target, p: Payload) -> Result:
    values, keys = p.as_bytes_lists()
    producer = _ck_producer(t)
    producer.list_topics(t.topic, timeout=30)
    failures: list = []
    sw = Stopwatch().start()
    step = 10_000
    for start in range(0, len(values), step):
        msgs = [{"value": values[i], "key": keys[i]}
                for i in range(start, min(start + step, len(values)))]
        while msgs:
            sent = producer.produce_batch(t.topic, msgs)
            failed = [m for m in msgs if "_error" in m]
            msgs = [dict(value=m["value"], key=m["key"]) for m in failed] if sent < len(msgs) \
                else []
            if msgs:
                producer.poll(0.05)
        producer.poll(0)
    error = _flush_checked(producer, failures, t)
    return _result("confluent", "produce_batch", "produce", len(p), p.nbytes, sw, error)


def _ck_consumer(t: Target):
    import confluent_kafka

    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": t.bootstrap, "group.id": "kafka-fast-bench-peer",
        "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    consumer.assign([confluent_kafka.TopicPartition(t.topic, i, confluent_kafka.OFFSET_BEGINNING)
                     for i in range(t.partitions)])
    return consumer


def confluent_poll(t: Target, p: Payload) -> Result:
    consumer = _ck_consumer(t)
    sw = Stopwatch().start()

    def take() -> int:
        msg = consumer.poll(1.0)
        return 1 if msg is not None and msg.error() is None else 0

    error = _drain(len(p), t, take)
    result = _result("confluent", "poll()", "consume", len(p), p.nbytes, sw, error)
    consumer.close()
    return result


def confluent_consume(t: Target, p: Payload) -> Result:
    consumer = _ck_consumer(t)
    sw = Stopwatch().start()

    def take() -> int:
        return sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)

    error = _drain(len(p), t, take)
    result = _result("confluent", "consume(10000)", "consume", len(p), p.nbytes, sw, error)
    consumer.close()
    return result


# ---- aiokafka -------------------------------------------------------------------------------

def aiokafka_produce(t: Target, p: Payload) -> Result:
    from aiokafka import AIOKafkaProducer

    values, keys = p.as_bytes_lists()
    codec = None if t.compression == "none" else t.compression

    async def main() -> Result:
        producer = AIOKafkaProducer(bootstrap_servers=t.bootstrap, linger_ms=5,
                                    acks=-1 if t.acks == "all" else int(t.acks),
                                    compression_type=codec, max_batch_size=1_000_000,
                                    enable_idempotence=False)
        await producer.start()
        sw = Stopwatch().start()
        pending = []
        for i in range(len(values)):
            pending.append(await producer.send(t.topic, values[i], key=keys[i]))
            if len(pending) >= 50_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
        result = _result("aiokafka", "send()", "produce", len(p), p.nbytes, sw)
        await producer.stop()
        return result

    return asyncio.run(main())


def aiokafka_consume(t: Target, p: Payload) -> Result:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> Result:
        consumer = AIOKafkaConsumer(bootstrap_servers=t.bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        tps = [TopicPartition(t.topic, i) for i in range(t.partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        sw = Stopwatch().start()
        got = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + t.timeout_s
        while got < len(p) and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=1000, max_records=100_000)
            got += sum(len(records) for records in batches.values())
        error = "" if got >= len(p) else f"read {got} of {len(p)} records"
        result = _result("aiokafka", "getmany()", "consume", len(p), p.nbytes, sw, error)
        await consumer.stop()
        return result

    return asyncio.run(main())


# ---- kafka-python ---------------------------------------------------------------------------

def kafka_python_produce(t: Target, p: Payload) -> Result:
    from kafka import KafkaProducer

    values, keys = p.as_bytes_lists()
    producer = KafkaProducer(bootstrap_servers=t.bootstrap, linger_ms=5,
                             acks=-1 if t.acks == "all" else int(t.acks),
                             compression_type=None if t.compression == "none" else t.compression,
                             batch_size=1_000_000)
    sw = Stopwatch().start()
    for i in range(len(values)):
        producer.send(t.topic, values[i], key=keys[i])
    producer.flush(t.timeout_s)
    result = _result("kafka-python", "send()", "produce", len(p), p.nbytes, sw)
    producer.close()
    return result


def kafka_python_consume(t: Target, p: Payload) -> Result:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=t.bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    tps = [TopicPartition(t.topic, i) for i in range(t.partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    sw = Stopwatch().start()

    def take() -> int:
        return sum(len(v) for v in consumer.poll(timeout_ms=1000, max_records=100_000).values())

    error = _drain(len(p), t, take)
    result = _result("kafka-python", "poll()", "consume", len(p), p.nbytes, sw, error)
    consumer.close()
    return result


#: client name -> (module that must import, produce paths, consume paths)
CLIENTS: dict[str, tuple[str, list[Callable], list[Callable]]] = {
    "kafka_fast": ("kafka_fast", [kafka_fast_produce_loop, kafka_fast_produce_batch],
                   [kafka_fast_poll, kafka_fast_consume, kafka_fast_consume_batch]),
    "confluent": ("confluent_kafka", [confluent_produce_loop, confluent_produce_batch],
                  [confluent_poll, confluent_consume]),
    "aiokafka": ("aiokafka", [aiokafka_produce], [aiokafka_consume]),
    "kafka-python": ("kafka", [kafka_python_produce], [kafka_python_consume]),
}

#: every benchmark function by name, for the worker process
FUNCTIONS: dict[str, Callable] = {
    fn.__name__: fn for _, produce, consume in CLIENTS.values() for fn in (*produce, *consume)
}
