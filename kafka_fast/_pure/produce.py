"""``Producer.produce``: the pure-Python twin of ``kafka_fast.producer._produce`` (every record
takes the general path, ``self._produce``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any


class ProduceRouter:
    """``Producer.produce``; this twin always takes ``self._produce`` (the general path)."""

    if TYPE_CHECKING:
        # Provided by the subclass (``Producer._produce``).
        def _produce(self, topic: Any, value: Any, key: Any, partition: Any, on_delivery: Any,
                     timestamp: Any, headers: Any, callback: Any) -> None: ...

    def produce(self, topic: Any, value: Any = None, key: Any = None, partition: Any = -1,
                on_delivery: Any = None, timestamp: Any = 0, headers: Any = None, *,
                callback: Any = None) -> None:
        """Queue one record; its delivery is reported by ``poll()``/``flush()``.

        ``value``/``key``: bytes, str (utf-8) or None. ``partition=-1`` lets the partitioner
        choose. ``on_delivery`` (alias ``callback``) is called as ``cb(err, msg)``.
        ``timestamp``: milliseconds since the epoch (0 = now). ``headers``: list of
        ``(name, value)`` tuples or a dict. Raises BufferError when the queue is full and
        KafkaException (MSG_SIZE_TOO_LARGE, _UNKNOWN_PARTITION, ...) for records that cannot
        be sent.
        """
        return self._produce(topic, value, key, partition, on_delivery, timestamp, headers,
                             callback)
