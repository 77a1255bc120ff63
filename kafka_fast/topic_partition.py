"""``TopicPartition`` and the special offset constants (confluent-kafka compatible)."""

from __future__ import annotations

from typing import Any

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001


class TopicPartition:
    """A topic, a partition and optionally an offset, metadata, leader epoch and error."""

    __slots__ = ("topic", "partition", "offset", "metadata", "leader_epoch", "error")

    def __init__(
        self,
        topic: str,
        partition: int = -1,
        offset: int = OFFSET_INVALID,
        metadata: str | None = None,
        leader_epoch: int | None = None,
        error: Any = None,
    ) -> None:
        if not isinstance(topic, str):
            raise TypeError("TopicPartition topic must be a str")
        self.topic = topic
        self.partition = int(partition)
        self.offset = int(offset)
        self.metadata = metadata
        self.leader_epoch = leader_epoch
        self.error = error

    def _key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def __hash__(self) -> int:
        return hash(self._key())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: TopicPartition) -> bool:
        return self._key() < other._key()

    def __le__(self, other: TopicPartition) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: TopicPartition) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: TopicPartition) -> bool:
        return self._key() >= other._key()

    def __repr__(self) -> str:
        extra = f",error={self.error!r}" if self.error else ""
        return (
            f"TopicPartition{{topic={self.topic},partition={self.partition},"
            f"offset={self.offset},leader_epoch={self.leader_epoch}{extra}}}"
        )

    __str__ = __repr__
