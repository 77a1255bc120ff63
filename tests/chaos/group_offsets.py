"""A consumer group's committed offsets, read with confluent-kafka (an independent client)."""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.brokers import Broker


class GroupOffsets:
    """Reads ``group``'s committed offsets of ``topic``'s partitions; close() when done."""

    def __init__(self, broker: Broker, group: str, topic: str, partitions: int) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.partitions = partitions
        self._consumer = Consumer(broker.client_config({
            "group.id": group, "enable.auto.commit": False,
            "log_level": 0}))  # brokers restart on purpose: no connection-failure logs

    def read(self, timeout: float = 10.0) -> dict[int, int]:
        """``{partition: offset}`` (-1001 where nothing is committed); {} while unreachable."""
        from confluent_kafka import KafkaException, TopicPartition

        try:
            found = self._consumer.committed(
                [TopicPartition(self.topic, p) for p in range(self.partitions)], timeout)
        except KafkaException:
            return {}
        return {tp.partition: tp.offset for tp in found}

    def wait_for(self, want: Callable[[dict[int, int]], bool], timeout: float,
                 what: str, check: Callable[[], None] | None = None) -> dict[int, int]:
        """Poll until ``want(offsets)``; ``check`` runs each round (may raise)."""
        deadline = time.monotonic() + timeout
        offsets: dict[int, int] = {}
        while time.monotonic() < deadline:
            offsets = self.read()
            if offsets and want(offsets):
                return offsets
            if check is not None:
                check()
            time.sleep(0.5)
        raise TimeoutError(f"{what} not within {timeout:.0f}s; committed: {offsets}")

    def close(self) -> None:
        self._consumer.close()
