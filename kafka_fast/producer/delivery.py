"""Delivery reports: completed batches handed from the I/O thread to ``poll()``/``flush()``.

The I/O thread appends each finished batch to :class:`DeliveryQueue`; the application thread
serves them: one ``Message`` and one callback per record for records that asked for a
callback, a count for the others. A failed batch nobody asked to hear about is reported to
``error_cb`` or, without one, raised from ``poll()``/``flush()``: nothing fails silently.

A callback that raises stops serving at once and its exception propagates from
``poll()``/``flush()`` (as in confluent-kafka); the reports not yet served are kept
(:class:`Rest`, in ``DeliveryQueue.rest``) and the next ``poll()``/``flush()`` serves them
first, so one callback's failure never costs another record its report.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from operator import length_hint
from typing import Any

from .._impl import load
from ..errors import KafkaError, KafkaException
from ..message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message, build
from .batch import ColumnEntries, ProducerBatch, RecordEntries

_columns = load("_columns", "columns")[0]
delivery_messages = _columns.delivery_messages
entry_messages = _columns.entry_messages


class Rest:
    """What a raising callback left unserved: ``fn(*args, it)`` serves the rest of ``it``."""

    __slots__ = ("fn", "args", "it", "records")

    def __init__(self, fn: Callable[..., None], args: tuple, it: Iterator[Any],
                 records: bool) -> None:
        self.fn = fn
        self.args = args
        self.it = it
        self.records = records  # each item is one record's report (counted by len(producer))

    def serve(self) -> None:
        self.fn(*self.args, self.it)

    def unserved(self) -> int:
        return length_hint(self.it) if self.records else 0


class DeliveryQueue:
    """Finished batches waiting for the application thread (thread-safe)."""

    def __init__(self) -> None:
        self.done: deque[ProducerBatch] = deque()
        #: Reports a raising callback left unserved, served first next time (application
        #: thread only).
        self.rest: deque[Rest] = deque()
        self._event = threading.Event()

    def serve_rest(self) -> int:
        """Serve what raising callbacks left, oldest first; returns the number of record
        reports served, or raises like they do."""
        rest = self.rest
        if not rest:
            return 0
        served = self.unserved()
        while rest:
            rest.popleft().serve()
        return served

    def unserved(self) -> int:
        """Records whose reports a raising callback left unserved (any thread)."""
        if not self.rest:
            return 0
        return sum(r.unserved() for r in list(self.rest))

    def put(self, batch: ProducerBatch) -> None:
        self.done.append(batch)
        self._event.set()

    def put_many(self, batches: list[ProducerBatch]) -> None:
        """Queue the reports of one response together: one wake-up of a waiting thread."""
        self.done.extend(batches)
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
                failures: list[KafkaError], rest: deque[Rest]) -> None:
    """Call the delivery callbacks of one finished batch on this thread.

    Failures of records without a callback are appended to ``failures``. When a callback
    raises, the reports after it go to the front of ``rest`` and the exception propagates.
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
            _defaults(batch, default_cb, rest, iter(range(batch.count)))
            return
        if default_cb is not None and not only_errors:
            _defaults(batch, default_cb, rest, iter(range(batch.count)))
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
        _each(cb, err, rest, iter(msgs))
        return
    appended = batch.log_append_time
    built: list[Message | None] = []
    entry_messages(built, entries.items, topic, partition,
                   base if err is None and base >= 0 else -1,
                   TIMESTAMP_LOG_APPEND_TIME if appended >= 0 else TIMESTAMP_CREATE_TIME,
                   appended, err)
    cbs = entries.items[::RecordEntries.WIDTH]
    if err is not None and default_cb is None:
        # Records without a callback, also those appended to the builder after the last
        # entry: one failure for them (counted before any callback can raise).
        unreported = cbs.count(None) + batch.count - len(entries)
        if unreported:
            failures.append(_batch_failure(batch, unreported))
    _entries(batch, default_cb, cbs, built, rest, iter(range(len(built))))


def _each(cb: Any, err: KafkaError | None, rest: deque[Rest], it: Iterator[Message]) -> None:
    """``cb(err, msg)`` for each message of ``it``."""
    try:
        for msg in it:
            cb(err, msg)
    except BaseException:
        rest.appendleft(Rest(_each, (cb, err, rest), it, True))
        raise


def _entries(batch: ProducerBatch, default_cb: Any, cbs: list, built: list,
             rest: deque[Rest], it: Iterator[int]) -> None:
    """The reports of records produced one at a time (entry ``i`` of ``it``)."""
    err = batch.error
    try:
        for i in it:
            cb = cbs[i]
            if cb is None:
                if default_cb is not None:
                    _one_default(batch, i, default_cb)
                continue
            cb(err, built[i])
    except BaseException:
        rest.appendleft(Rest(_entries, (batch, default_cb, cbs, built, rest), it, True))
        raise


def _defaults(batch: ProducerBatch, cb: Any, rest: deque[Rest], it: Iterator[int]) -> None:
    """Reports for the records of ``it`` to the default callback."""
    try:
        for i in it:
            _one_default(batch, i, cb)
    except BaseException:
        rest.appendleft(Rest(_defaults, (batch, cb, rest), it, True))
        raise


def report_failures(error_cb: Any, rest: deque[Rest], it: Iterator[KafkaError]) -> None:
    """``error_cb(err)`` for each failure of ``it`` (when ``error_cb`` raises, the failures
    after it wait at the front of ``rest``)."""
    try:
        for err in it:
            error_cb(err)
    except BaseException:
        rest.appendleft(Rest(report_failures, (error_cb, rest), it, False))
        raise


def _one_default(batch: ProducerBatch, i: int, cb: Any) -> None:
    """A report for a record whose key/value were not kept (no callback when produced)."""
    err = batch.error
    base = batch.base_offset
    msg = build(batch.part.topic, batch.part.partition,
                base + i if err is None and base >= 0 else -1001, None, None, None,
                *_timestamp(batch, -1), err, -1)
    cb(err, msg)


def _batch_failure(batch: ProducerBatch, count: int) -> KafkaError:
    err = batch.error
    return KafkaError.of(
        err.code(),
        f"{count} record(s) to {batch.part.topic} [{batch.part.partition}] failed: {err.str()}",
        fatal=err.fatal(), retriable=err.retriable())


def raise_failures(failures: list[KafkaError]) -> None:
    """Raise the first unreported failure (the others are summarised in its reason)."""
    if not failures:
        return
    first = failures[0]
    if len(failures) > 1:
        total = KafkaError.of(first.code(), f"{first.str()} (and {len(failures) - 1} more "
                           "failed batch(es))", fatal=first.fatal(),
                           retriable=first.retriable())
        raise KafkaException(total)
    raise KafkaException(first)
