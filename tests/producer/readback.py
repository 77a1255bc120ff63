"""Read records back with independent clients (confluent-kafka, kcat) to compare exactly."""

from __future__ import annotations

import subprocess
import time
from typing import NamedTuple

from harness.brokers import Broker


class Got(NamedTuple):
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    timestamp: int


def read_confluent(broker: Broker, topic: str, partitions: int, count: int,
                   timeout: float = 30.0) -> list[Got]:
    """Every record of ``topic`` (``count`` expected) sorted by (partition, offset)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(broker.client_config({
        "group.id": f"readback-{topic}", "enable.auto.commit": False,
        "enable.partition.eof": False, "fetch.wait.max.ms": 100,
        "fetch.message.max.bytes": 4 * 1024 * 1024,
    }))
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        got: list[Got] = []
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=min(10000, count - len(got)), timeout=0.5):
                if msg.error() is not None:
                    raise RuntimeError(f"consume error: {msg.error()}")
                got.append(Got(msg.partition(), msg.offset(), msg.key(), msg.value(),
                               tuple(msg.headers() or ()), msg.timestamp()[1]))
        # Anything beyond ``count`` would be a duplicate: look a little longer for it.
        for msg in consumer.consume(num_messages=100, timeout=0.5):
            if msg.error() is None:
                got.append(Got(msg.partition(), msg.offset(), msg.key(), msg.value(),
                               tuple(msg.headers() or ()), msg.timestamp()[1]))
        if len(got) < count:
            marks = []
            for p in range(partitions):
                try:
                    marks.append(consumer.get_watermark_offsets(
                        TopicPartition(topic, p), timeout=5))
                except Exception as exc:  # a diagnostic, reported as text
                    marks.append(repr(exc))
            raise TimeoutError(f"read {len(got)} of {count} records from {topic}; "
                               f"watermarks per partition {marks}, "
                               f"assignment {consumer.assignment()}")
        return sorted(got)
    finally:
        consumer.close()


def read_kcat(kcat: str, broker: Broker, topic: str, partition: int, count: int) -> list[bytes]:
    """``partition|offset|key|value|headers|timestamp`` lines printed by kcat."""
    out = subprocess.run(
        [kcat, "-C", "-b", broker.bootstrap, "-t", topic, "-p", str(partition),
         "-o", "beginning", "-c", str(count), "-e", "-f", "%p|%o|%k|%s|%h|%T\\n"],
        check=True, timeout=60, capture_output=True).stdout
    return out.splitlines()


def high_watermarks(broker: Broker, topic: str, partitions: int) -> list[int]:
    """The high watermark of each partition of ``topic`` (confluent-kafka)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(broker.client_config({"group.id": f"watermarks-{topic}"}))
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions)]
    finally:
        consumer.close()
