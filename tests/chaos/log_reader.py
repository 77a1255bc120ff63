"""A kafka_fast consumer reading every partition of a topic from the start, with one
isolation level, through ``poll()`` or the columnar ``consume_batch()``."""

from __future__ import annotations

import time

from harness.brokers import Broker

from kafka_fast import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition


class LogReader:
    """Accumulates ``records[partition] = [(offset, value), ...]`` as it reads."""

    def __init__(self, broker: Broker, topic: str, partitions: int, isolation: str,
                 how: str = "poll") -> None:
        if how not in ("poll", "batch"):
            raise ValueError(f"how={how!r}: 'poll' or 'batch'")
        self.how = how
        self.records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        self.errors: list[KafkaError] = []
        self._consumer = Consumer(broker.client_config({
            "group.id": f"reader-{topic}-{isolation}-{how}", "enable.auto.commit": False,
            "isolation.level": isolation, "fetch.wait.max.ms": 100}))
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                               for p in range(partitions)])

    def count(self) -> int:
        return sum(len(r) for r in self.records.values())

    def _read_once(self) -> None:
        if self.how == "batch":
            view = self._consumer.consume_batch(10_000, 0.2)
            for p, offset, value in zip(view.partitions.tolist(), view.offsets.tolist(),
                                        view.values.to_pylist(), strict=True):
                self.records[p].append((offset, value))
            return
        for msg in self._consumer.consume(10_000, 0.2):
            err = msg.error()
            if err is None:
                self.records[msg.partition()].append((msg.offset(), msg.value()))
            elif err.code() != KafkaError._PARTITION_EOF:
                self.errors.append(err)

    def read_until(self, count: int, timeout: float) -> None:
        """Read until ``count`` records in all (raises TimeoutError saying how many came)."""
        deadline = time.monotonic() + timeout
        while self.count() < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.how} reader: {self.count()} of {count} records "
                                   f"within {timeout:.0f}s (errors {self.errors})")
            self._read_once()

    def read_for(self, seconds: float) -> None:
        """Keep reading for ``seconds`` (to see that nothing more arrives)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._read_once()

    def values(self) -> dict[int, list[bytes]]:
        """Per partition, the values in offset order (offsets must increase)."""
        return {p: [v for _, v in rows] for p, rows in self.records.items()}

    def close(self) -> None:
        self._consumer.close()
