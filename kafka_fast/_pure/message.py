"""``Message`` in pure Python (twin of ``kafka_fast._native._message``)."""

from __future__ import annotations

import operator
from typing import Any

_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _int(value: Any, bounds: tuple[int, int], what: str) -> int:
    number = operator.index(value)
    if not bounds[0] <= number <= bounds[1]:
        raise OverflowError(f"{what} {number} does not fit in {bounds[1].bit_length() + 1} bits")
    return number


def _real(value: Any) -> float:
    # What C's PyFloat_AsDouble takes: numbers, not the strings float() parses.
    if not (hasattr(type(value), "__float__") or hasattr(type(value), "__index__")):
        raise TypeError(f"must be real number, not {type(value).__name__}")
    return float(value)


class Message:
    """A record with its topic, partition, offset and error (confluent-kafka's accessors)."""

    # Named where users import it from, as the compiled twin: pickles name
    # ``kafka_fast.message.Message``, which loads in either mode and in later releases.
    __module__ = "kafka_fast.message"
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
        timestamp: tuple[int, int] | None = (0, 0),
        latency: float | None = None,
        leader_epoch: int | None = None,
        delivery_count: int = -1,
    ) -> None:
        # confluent-kafka's constructor: any object for the data fields, integers for the
        # positions (a negative partition, offset, latency or leader epoch is "none"),
        # a (type, ms) tuple or None for the timestamp; delivery_count is a 16-bit count,
        # "none" when not positive. None also stands for "none" for latency and leader epoch.
        partition = _int(partition, _INT32, "partition")
        offset = _int(offset, _INT64, "offset")
        if timestamp is None:
            timestamp = (0, 0)
        if not isinstance(timestamp, tuple) or len(timestamp) != 2:
            raise TypeError("timestamp must be a tuple of (int, int)")
        tstype = _int(timestamp[0], _INT32, "timestamp type")
        ts = _int(timestamp[1], _INT64, "timestamp")
        lat = -1.0 if latency is None else _real(latency)
        epoch = -1 if leader_epoch is None else _int(leader_epoch, _INT32, "leader_epoch")
        count = _int(delivery_count, (-32768, 32767), "delivery_count")
        self._topic = topic
        self._partition = partition if partition >= 0 else -1
        self._offset = offset if offset >= 0 else -1001
        self._key = key
        self._value = value
        self._headers = headers
        self._timestamp_type, self._timestamp = tstype, ts
        self._error = error
        self._latency = lat if not lat < 0 else None
        self._leader_epoch = epoch if epoch >= 0 else None
        self._delivered = count if count > 0 else None

    def topic(self) -> str | None:
        """The topic name."""
        return self._topic

    def partition(self) -> int | None:
        """The partition, or None if unassigned. A record produced to a partition its topic
        does not have reports that partition, as confluent-kafka does."""
        return None if self._partition == -1 else self._partition

    def offset(self) -> int | None:
        """The offset, or None if unknown."""
        return None if self._offset < 0 else self._offset

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
        return (Message, (self._topic, self._partition, self._offset, self._key, self._value,
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


def build(topic: Any, partition: int, offset: int, key: Any, value: Any, headers: Any,
          timestamp_type: int, timestamp: int, error: Any, leader_epoch: int) -> Message:
    """A ``Message`` of these fields, the partition as given (a delivery report names the
    partition a record was produced to, even a negative one, as confluent-kafka's do); a
    negative offset or leader epoch is "none"."""
    msg = Message(topic, -1, offset, key, value, headers, error, (timestamp_type, timestamp),
                  None, leader_epoch)
    msg._partition = partition
    return msg
