"""Reading a topic back with confluent-kafka, to check what the Spark tests wrote."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, KafkaError, TopicPartition


def read_records(kafka, topic: str, partitions: int, isolation: str = "read_committed",
                 settle: float = 3.0) -> list[tuple]:
    """Every record a consumer with ``isolation`` sees, from the start of each partition
    until every partition is at its end (the last stable offset for read_committed), or
    until nothing new came for ``settle`` seconds: (partition, offset, key, value,
    headers), sorted."""
    consumer = Consumer(kafka.client_config({
        "group.id": f"check-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "isolation.level": isolation, "fetch.wait.max.ms": 50,
        "enable.partition.eof": True}))
    out = []
    at_end: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        quiet = time.monotonic() + settle
        while time.monotonic() < quiet and len(at_end) < partitions:
            msgs = consumer.consume(num_messages=10_000, timeout=0.5)
            for msg in msgs:
                if msg.error() is not None and msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                    continue
                assert msg.error() is None, msg.error()
                at_end.discard(msg.partition())
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
