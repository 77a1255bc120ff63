"""What a share consumer hands out: ``Messages``, ``ShareMessage`` (a Message with its
delivery count), ``AcknowledgeType`` and the two state errors (confluent-kafka's names)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from typing import Any, overload

from ..message import Message


class AcknowledgeType(enum.IntEnum):
    """How the broker treats an acknowledged record (KIP-932's acknowledge types)."""

    #: processed: never delivered again
    ACCEPT = 1
    #: not processed: available again for delivery (its delivery count grows)
    RELEASE = 2
    #: not processable: archived, never delivered again
    REJECT = 3
    #: still being processed: the acquisition lock starts again, and the record still
    #: awaits one of the three above (KIP-1222, ShareAcknowledge v2: Kafka 4.2+)
    RENEW = 4


#: The acknowledge type of an offset in an acquired range with no record (a gap).
GAP = 0


class IllegalStateException(RuntimeError):
    """A share consumer call made in a state that does not allow it (e.g. closed)."""


class ConcurrentModificationException(RuntimeError):
    """A share consumer called from a second thread while a call is in progress."""


class ShareMessage(Message):
    """A record acquired from a share group, with how often the group delivered it."""

    __slots__ = ("_delivery_count",)

    def __init__(self, msg: Message, topic: str, partition: int, offset: int,
                 delivery_count: int) -> None:
        """``msg``'s record (at ``topic``, ``partition``, ``offset``) delivered
        ``delivery_count`` times."""
        super().__init__(topic, partition, offset, msg.key(), msg.value(), msg.headers(),
                         msg.error(), msg.timestamp(), msg.latency(), msg.leader_epoch())
        self._delivery_count = delivery_count

    def delivery_count(self) -> int | None:
        """1 the first time the group delivers this record, one more on each redelivery
        (after a RELEASE or an expired acquisition lock)."""
        return self._delivery_count


class Messages:
    """The batch of messages ``ShareConsumer.poll`` returns: a read-only sequence (iteration,
    ``len``, indexing, slices) with ``count()``, ``is_empty()`` and ``records()``."""

    __slots__ = ("_records",)

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._records = list(messages)

    def records(self) -> list[Message]:
        """A copy of the messages as a list."""
        return list(self._records)

    def count(self) -> int:
        """The number of messages."""
        return len(self._records)

    def is_empty(self) -> bool:
        """True when the batch holds no message."""
        return not self._records

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._records)

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> Messages: ...

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return Messages(self._records[index])
        return self._records[index]

    def __repr__(self) -> str:
        return f"Messages({self._records!r})"
