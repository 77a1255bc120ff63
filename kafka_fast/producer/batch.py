"""A sealed record batch on its way to a partition leader, and what its delivery report needs.

A batch starts as an open ``RecordBatchBuilder`` owned by the accumulator. Sealing moves it
into a :class:`ProducerBatch` (still unbuilt: the sender stamps the producer id, epoch and
sequence and builds it on the I/O thread). ``produce_batch`` creates batches whose payload is
already encoded; the sender then patches the producer fields into the bytes.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ..records import patch_producer_fields
from .partitioner import gather_column

#: The producer fields of a batch encoded without them (producer id, epoch, base sequence).
UNSTAMPED = (-1, -1, -1)


class RecordEntries:
    """Per-record delivery data of a batch filled by ``produce()``.

    ``items`` is flat: five entries per record, ``callback, key, value, headers,
    timestamp_ms``, with a None callback for records that asked for no report. No object is
    created per record, so a million waiting reports add nothing for the cyclic garbage
    collector to walk (a tuple per record made collections cost more than producing).
    """

    __slots__ = ("items",)

    WIDTH = 5
    EMPTY = (None, None, None, None, 0)

    def __init__(self, backfill: int = 0) -> None:
        self.items: list[Any] = list(self.EMPTY) * backfill

    def __len__(self) -> int:
        return len(self.items) // self.WIDTH

    def add(self, callback: Any, key: Any, value: Any, headers: Any, timestamp: int) -> None:
        self.items += (callback, key, value, headers, timestamp)


class ColumnEntries:
    """Delivery data of a ``produce_batch`` batch: the columns it was encoded from, and
    ``rows``, the indices of its records in them (None: the columns hold just its records).

    Records are materialised (one ``Message`` each) only when the reports are served.
    """

    __slots__ = ("callback", "values", "keys", "timestamps", "headers", "count", "rows")

    def __init__(self, callback: Any, values: Any, keys: Any, timestamps: Any, headers: Any,
                 count: int, rows: Any = None) -> None:
        self.callback = callback
        self.values = values
        self.keys = keys
        self.timestamps = timestamps
        self.headers = headers
        self.count = count
        self.rows = rows

    def columns(self) -> tuple[Any, Any, Any]:
        """``(values, keys, timestamps)`` of just this batch's records, in order."""
        rows = self.rows
        if rows is None:
            return self.values, self.keys, self.timestamps
        n = len(rows)
        return (gather_column(self.values, rows, 0, n), gather_column(self.keys, rows, 0, n),
                None if self.timestamps is None else self.timestamps[rows])

    def __len__(self) -> int:
        return self.count


class ProducerBatch:
    """One batch for one partition, from sealing to its delivery report."""

    __slots__ = (
        "part", "builder", "payload", "count", "size", "created", "entries",
        "base_sequence", "stamp", "attempts", "retry_at",
        "error", "base_offset", "log_append_time", "order", "sent_at", "reported", "encoding",
        "topic_id", "in_doubt", "last_error", "__weakref__",
    )

    def __init__(self, part: Any, count: int, size: int, created: float, entries: Any,
                 builder: Any = None, payload: Any = None, order: int = 0) -> None:
        self.part = part  # PartitionState
        self.builder = builder
        self.payload = payload
        #: the builder being encoded on an encoder thread (compressed batches of produce())
        self.encoding: Future | None = None
        self.count = count
        self.size = size
        self.created = created  # monotonic seconds of the first record
        self.entries = entries  # None, RecordEntries or ColumnEntries
        self.base_sequence = -1  # assigned by the sender (idempotence) when first drained
        #: The topic's ID (uuid.UUID) when the batch was first sent: the incarnation of the
        #: topic it may be written to (None: not sent yet, or no ID known).
        self.topic_id: Any = None
        #: A request carrying it failed without an answer: it may have been written.
        self.in_doubt = False
        self.stamp = UNSTAMPED  # (producer_id, epoch, base_sequence) the payload carries
        self.attempts = 0
        #: the error of the last attempt that is being retried (None: not retried)
        self.last_error: Any = None
        self.retry_at = 0.0
        self.error: Any = None
        self.base_offset = -1
        self.log_append_time = -1
        self.order = order  # creation order within the partition (keeps retries in place)
        self.sent_at = 0.0
        self.reported = False  # its delivery report was queued

    @property
    def topic(self) -> str:
        return self.part.topic

    @property
    def partition(self) -> int:
        return self.part.partition

    def encoded(self) -> bool:
        """False while an encoder thread is still building the payload."""
        return self.encoding is None or self.encoding.done()

    def wire_bytes(self, producer_id: int, producer_epoch: int, transactional: bool) -> Any:
        """The encoded batch stamped with these producer fields and ``base_sequence``
        (built on first use, patched when the fields changed since)."""
        stamp = (producer_id, producer_epoch, self.base_sequence)
        if self.encoding is not None:
            # Encoded without producer fields (stamp (-1, -1, -1)); patched below if needed.
            self.payload = self.encoding.result()
            self.encoding = None
            self.builder = None
        if self.payload is None:
            builder = self.builder
            builder.set_producer_state(producer_id, producer_epoch, self.base_sequence,
                                       transactional)
            self.payload = builder.build()
            self.builder = None
        elif stamp != self.stamp:
            # Never sent yet and written into the producer's own buffer: stamped in place
            # (a sent payload may still be held by a request, so it is copied).
            payload = self.payload
            in_place = (self.stamp == UNSTAMPED and self.sent_at == 0.0
                        and isinstance(payload, memoryview) and not payload.readonly)
            self.payload = patch_producer_fields(
                payload, producer_id, producer_epoch, self.base_sequence, transactional,
                in_place=in_place)
        self.stamp = stamp
        return self.payload

    def __repr__(self) -> str:
        return (f"ProducerBatch({self.part.topic}[{self.part.partition}], count={self.count}, "
                f"seq={self.base_sequence}, attempts={self.attempts})")
