"""``Message``: one record as delivered to callbacks and returned by ``poll``/``consume``."""

from __future__ import annotations

from typing import Any

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2


class Message:
    """A record with its topic, partition, offset and error (confluent-kafka's accessors)."""

    __slots__ = (
        "_topic", "_partition", "_offset", "_key", "_value", "_headers",
        "_timestamp_type", "_timestamp", "_error", "_latency", "_leader_epoch", "_delivered",
    )

    def __init__(
        self,
        topic: Any = None,
        partition: int = -1,
        offset: int = -1001,
        key: Any = None,
        value: Any = None,
        headers: Any = None,
        error: Any = None,
        timestamp: tuple[int, int] | None = (TIMESTAMP_NOT_AVAILABLE, 0),
        latency: float | None = None,
        leader_epoch: int | None = None,
        delivery_count: int = -1,
    ) -> None:
        # confluent-kafka's constructor: any object for the data fields (tests build
        # messages of placeholders); a negative latency or leader epoch is "none";
        # delivery_count is a 16-bit count, "none" when not positive.
        if not -32768 <= delivery_count <= 32767:
            raise OverflowError(f"delivery_count {delivery_count} does not fit in 16 bits")
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._timestamp_type, self._timestamp = (timestamp if timestamp is not None
                                                 else (TIMESTAMP_NOT_AVAILABLE, 0))
        self._error = error
        self._latency = latency if latency is not None and latency >= 0 else None
        self._leader_epoch = leader_epoch if leader_epoch is not None and leader_epoch >= 0 \
            else None
        self._delivered = delivery_count if delivery_count > 0 else None

    def topic(self) -> str | None:
        """The topic name."""
        return self._topic

    def partition(self) -> int | None:
        """The partition, or None if unassigned (-1). A record produced to a partition its
        topic does not have reports that partition, as confluent-kafka does."""
        return None if self._partition is None or self._partition == -1 else self._partition

    def offset(self) -> int | None:
        """The offset, or None if unknown."""
        return None if self._offset is None or self._offset < 0 else self._offset

    def key(self) -> bytes | None:
        """The key bytes (None if null)."""
        return self._key

    def value(self) -> bytes | None:
        """The value bytes (None if null)."""
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        """Headers as a list of ``(name, value)`` pairs (None for a record without any)."""
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        """``(timestamp_type, timestamp_ms)``."""
        return (self._timestamp_type, self._timestamp)

    def error(self) -> Any:
        """A ``KafkaError`` if this message reports an error, else None."""
        return self._error

    def latency(self) -> float | None:
        """Produce latency in seconds (delivery reports only)."""
        return self._latency

    def leader_epoch(self) -> int | None:
        """The partition leader epoch of the record's batch, if known."""
        return self._leader_epoch

    def len(self) -> int:
        """Length of the value in bytes."""
        return len(self._value) if self._value is not None else 0

    def __len__(self) -> int:
        return self.len()

    def set_headers(self, headers: list[tuple[str, bytes | None]] | None) -> None:
        """Replace the headers."""
        self._headers = headers

    def set_key(self, key: bytes | None) -> None:
        """Replace the key."""
        self._key = key

    def set_value(self, value: bytes | None) -> None:
        """Replace the value."""
        self._value = value

    def set_topic(self, topic: str | None) -> None:
        """Replace the topic name."""
        self._topic = topic

    def set_error(self, error: Any) -> None:
        """Replace the error."""
        self._error = error

    def deserialized_key(self) -> Any:
        """The key as a ``DeserializingConsumer`` left it (the same object as ``key()``)."""
        return self._key

    def deserialized_value(self) -> Any:
        """The value as a ``DeserializingConsumer`` left it (the same object as ``value()``)."""
        return self._value

    def delivery_count(self) -> int | None:
        """How often a share group delivered this record; None outside share groups."""
        return self._delivered

    def __reduce__(self) -> tuple[type, tuple]:
        """Pickled as confluent-kafka pickles it: the base class and its constructor's
        arguments (-1, -1001, -1.0 standing for "none")."""
        latency, epoch, count = self.latency(), self.leader_epoch(), self.delivery_count()
        partition, offset = self.partition(), self.offset()
        return (Message, (self._topic, -1 if partition is None else partition,
                          -1001 if offset is None else offset, self._key, self._value,
                          self._headers, self._error, self.timestamp(),
                          -1.0 if latency is None else latency, -1 if epoch is None else epoch,
                          -1 if count is None else count))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self.__reduce__()[1] == other.__reduce__()[1]

    __hash__ = None  # type: ignore[assignment]  # equal by value, so unhashable (as confluent-kafka's)

    def __repr__(self) -> str:
        return (
            f"Message(topic={self._topic!r}, partition={self._partition}, "
            f"offset={self._offset}, key={self._key!r}, error={self._error!r})"
        )
