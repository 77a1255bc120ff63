"""Reading a topic back with confluent-kafka, to check what the Spark tests wrote."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, TopicPartition


def read_records(kafka, topic: str, partitions: int, isolation: str = "read_committed",
                 settle: float = 3.0) -> list[tuple]:
    """Every record a consumer with ``isolation`` sees, from the start of each partition
    until nothing new came for ``settle`` seconds: (partition, offset, key, value,
    headers), sorted."""
    consumer = Consumer(kafka.client_config({
        "group.id": f"check-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "isolation.level": isolation, "fetch.wait.max.ms": 50}))
    out = []
    try:
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        quiet = time.monotonic() + settle
        while time.monotonic() < quiet:
            msgs = consumer.consume(num_messages=10_000, timeout=0.5)
            for msg in msgs:
                assert msg.error() is None, msg.error()
                out.append((msg.partition(), msg.offset(), msg.key(), msg.value(),
                            tuple(msg.headers() or ())))
            if msgs:
                quiet = time.monotonic() + settle
    finally:
        consumer.close()
    return sorted(out)


def read_committed(kafka, topic: str, partitions: int, isolation: str = "read_committed",
                   settle: float = 3.0) -> list[tuple]:
    """The same without headers: (partition, offset, key, value), sorted."""
    return [r[:4] for r in read_records(kafka, topic, partitions, isolation, settle)]
