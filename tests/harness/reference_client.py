"""confluent-kafka (librdkafka) as the reference client: produce and read back exact records."""

from __future__ import annotations

import time
from typing import NamedTuple

from harness.brokers import Broker


class Record(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def produce(
    broker: Broker,
    topic: str,
    items: list[tuple[int, bytes | None, bytes | None]],
    extra: dict | None = None,
    timeout: float = 30.0,
) -> list[Record]:
    """Produce ``(partition, key, value)`` items in order; return what the broker acknowledged.

    Raises RuntimeError naming the first delivery error or the records still undelivered.
    """
    from confluent_kafka import Producer

    conf = broker.client_config({"linger.ms": 5, "message.timeout.ms": int(timeout * 1000)})
    conf.update(extra or {})
    producer = Producer(conf)
    acked: list[Record] = []
    errors: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(f"{msg.topic()}[{msg.partition()}] key={msg.key()!r}: {err}")
        else:
            acked.append(Record(msg.partition(), msg.offset(), msg.key(), msg.value()))

    for partition, key, value in items:
        producer.produce(topic, value=value, key=key, partition=partition, on_delivery=on_delivery)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if errors:
        raise RuntimeError(f"delivery failed: {errors[0]} ({len(errors)} errors)")
    if remaining:
        raise RuntimeError(f"{remaining} records not delivered within {timeout}s")
    return acked


def consume(
    broker: Broker,
    topic: str,
    partitions: int,
    count: int,
    extra: dict | None = None,
    timeout: float = 30.0,
) -> list[Record]:
    """Read ``count`` records from offset 0 of each partition (assign, no group).

    Returns them sorted by (partition, offset); raises TimeoutError with what was read.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    conf = broker.client_config(
        {
            "group.id": f"reader-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "fetch.wait.max.ms": 100,
        }
    )
    conf.update(extra or {})
    consumer = Consumer(conf)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: list[Record] = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=count - len(got), timeout=0.5):
                if msg.error() is not None:
                    raise RuntimeError(f"consume error: {msg.error()}")
                got.append(Record(msg.partition(), msg.offset(), msg.key(), msg.value()))
        if len(got) < count:
            raise TimeoutError(f"read {len(got)} of {count} records from {topic} in {timeout}s")
        return sorted(got)
    finally:
        consumer.close()
