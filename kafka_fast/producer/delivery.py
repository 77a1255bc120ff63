"""Delivery reports: completed batches handed from the I/O thread to ``poll()``/``flush()``.

The I/O thread appends each finished batch to :class:`DeliveryQueue`; the application thread
serves them: one ``Message`` and one callback per record for records that asked for a
callback, a count for the others. A failed batch nobody asked to hear about is reported to
``error_cb`` or, without one, raised from ``poll()``/``flush()``: nothing fails silently.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from .._impl import load
from ..errors import KafkaError, KafkaException
from ..message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message
from .batch import ColumnEntries, ProducerBatch, RecordEntries

_columns = load("_columns", "columns")[0]
delivery_messages = _columns.delivery_messages
entry_messages = _columns.entry_messages


class DeliveryQueue:
    """Finished batches waiting for the application thread (thread-safe)."""

    def __init__(self) -> None:
        self.done: deque[ProducerBatch] = deque()
        self._event = threading.Event()

    def put(self, batch: ProducerBatch) -> None:
        self.done.append(batch)
        self._event.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a report; True if one is queued."""
        if self.done:
            return True
        self._event.clear()
        if self.done:
            return True
        return self._event.wait(timeout)

    def arm(self) -> None:
        """Start waiting for the next report: ``wait_armed`` returns once one is put after
        this call (whether or not reports are already queued)."""
        self._event.clear()

    def wait_armed(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a report put since ``arm``."""
        return self._event.wait(timeout)

    def notify(self) -> None:
        """Wake a thread blocked in ``wait`` (e.g. when the queue drained)."""
        self._event.set()

    def __len__(self) -> int:
        return len(self.done)


def _timestamp(batch: ProducerBatch, ts: int) -> tuple[int, int]:
    if batch.log_append_time >= 0:
        return (TIMESTAMP_LOG_APPEND_TIME, batch.log_append_time)
    return (TIMESTAMP_CREATE_TIME, ts)


def serve_batch(batch: ProducerBatch, default_cb: Any, only_errors: bool,
                failures: list[KafkaError]) -> None:
    """Call the delivery callbacks of one finished batch on this thread.

    Failures of records without a callback are appended to ``failures``.
    """
    err = batch.error
    entries = batch.entries
    topic = batch.part.topic
    partition = batch.part.partition
    if entries is None:
        if err is not None:
            if default_cb is None:
                failures.append(_batch_failure(batch, batch.count))
                return
            _per_record_default(batch, default_cb)
            return
        if default_cb is not None and not only_errors:
            _per_record_default(batch, default_cb)
        return
    if only_errors and err is None:
        return
    base = batch.base_offset
    if isinstance(entries, ColumnEntries):
        cb = entries.callback or default_cb
        if cb is None:
            if err is not None:
                failures.append(_batch_failure(batch, batch.count))
            return
        msgs: list[Message] = []
        appended = batch.log_append_time
        values, keys, timestamps = entries.columns()
        delivery_messages(
            msgs, topic, partition, base if err is None and base >= 0 else -1,
            values, keys, entries.headers, timestamps,
            TIMESTAMP_LOG_APPEND_TIME if appended >= 0 else TIMESTAMP_CREATE_TIME,
            appended, err, entries.count)
        for msg in msgs:
            cb(err, msg)
        return
    unreported = 0
    appended = batch.log_append_time
    built: list[Message | None] = []
    entry_messages(built, entries.items, topic, partition,
                   base if err is None and base >= 0 else -1,
                   TIMESTAMP_LOG_APPEND_TIME if appended >= 0 else TIMESTAMP_CREATE_TIME,
                   appended, err)
    for i, (cb, report) in enumerate(zip(entries.items[::RecordEntries.WIDTH], built,
                                         strict=True)):
        if cb is None:
            if default_cb is None:
                unreported += 1
                continue
            _one_default(batch, i, default_cb)
            continue
        cb(err, report)
    # Records appended to the builder after the last entry have no callback either.
    unreported += batch.count - len(entries)
    if err is not None and unreported and default_cb is None:
        failures.append(_batch_failure(batch, unreported))


def _per_record_default(batch: ProducerBatch, cb: Any) -> None:
    for i in range(batch.count):
        _one_default(batch, i, cb)


def _one_default(batch: ProducerBatch, i: int, cb: Any) -> None:
    """A report for a record whose key/value were not kept (no callback when produced)."""
    err = batch.error
    base = batch.base_offset
    msg = Message(batch.part.topic, batch.part.partition,
                  base + i if err is None and base >= 0 else -1001, None, None, None,
                  err, _timestamp(batch, -1))
    cb(err, msg)


def _batch_failure(batch: ProducerBatch, count: int) -> KafkaError:
    err = batch.error
    return KafkaError(
        err.code(),
        f"{count} record(s) to {batch.part.topic} [{batch.part.partition}] failed: {err.str()}",
        fatal=err.fatal(), retriable=err.retriable())


def raise_failures(failures: list[KafkaError]) -> None:
    """Raise the first unreported failure (the others are summarised in its reason)."""
    if not failures:
        return
    first = failures[0]
    if len(failures) > 1:
        total = KafkaError(first.code(), f"{first.str()} (and {len(failures) - 1} more "
                           "failed batch(es))", fatal=first.fatal(),
                           retriable=first.retriable())
        raise KafkaException(total)
    raise KafkaException(first)
