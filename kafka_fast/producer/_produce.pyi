"""Types of ``Producer.produce``'s compiled fast path (``_produce.pyx``; twin:
``kafka_fast._pure.produce``)."""

from typing import Any

from kafka_fast.producer._routing import RouterState

class ProduceRouter:
    """``Producer.produce``; a record the fast path cannot take goes to ``self._produce``,
    which the subclass (``Producer``) defines."""

    _acc: RouterState
    _txn: Any
    _default_cb: Any

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
