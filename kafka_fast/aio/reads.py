"""Reads of the ``AIOConsumer`` (``poll``, ``consume``, ``consume_batch``) on a worker thread,
made safe to cancel and to interrupt.

A read runs as a loop of short blocking calls (at most ``SLICE`` seconds each) on the
executor, so a read can be told to stop (``Read.stop``) and ends within one slice. A read whose
awaiting task is cancelled goes on until its current slice ends; what it got is kept
(``Held``) and handed out by the next read, so cancellation never loses a record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..consumer.batch_view import RecordBatchView
from ..consumer.delivery import view_from_messages
from ..errors import KafkaError, KafkaException
from ..message import Message

#: Longest single blocking call of a read: how soon a stopped read ends.
SLICE = 0.2


def _empty(result: Any) -> bool:
    return result is None or (result.__class__ is not Message and len(result) == 0)


def run_read(call: Callable[[float], Any], timeout: float | None,
             stop: threading.Event) -> Any:
    """``call(t)`` with slices of ``timeout`` (None or negative: no limit) until it returns
    something, the time is up or ``stop`` is set (worker thread)."""
    if timeout is not None and (isinstance(timeout, bool)
                                or not isinstance(timeout, (int, float)) or 0 <= timeout <= SLICE):
        return call(timeout)  # quick, or refused by the consumer with a clear error
    deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
    while True:
        wait = SLICE if deadline is None else max(0.0, min(SLICE, deadline - time.monotonic()))
        result = call(wait)
        if not _empty(result) or stop.is_set():
            return result
        if deadline is not None and time.monotonic() >= deadline:
            return result


class Held:
    """What reads got but did not hand out: the messages of a cancelled ``poll()`` or
    ``consume()``, the view of a cancelled ``consume_batch()``, or the exception one raised."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.view: RecordBatchView | None = None
        self.error: BaseException | None = None

    def __bool__(self) -> bool:
        return bool(self.messages) or self.view is not None or self.error is not None

    def keep(self, result: Any) -> None:
        """Keep what a cancelled read returned."""
        if result is None:
            return
        if result.__class__ is Message:
            self.messages.append(result)
        elif isinstance(result, RecordBatchView):
            if len(result):
                self._spill()
                self.view = result
        else:
            self._spill()
            self.messages.extend(result)

    def put_back(self, msgs: list[Message]) -> None:
        """Messages a read took but could not hand out: the next read starts with them."""
        self._spill()
        self.messages[:0] = msgs

    def drop(self, partitions: list | None = None) -> None:
        """Forget what is held (of ``partitions``' topic and partition only, when given): the
        application moved those positions (assign, seek, ...)."""
        if partitions is None:
            self.messages, self.view = [], None
            return
        self._spill()
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self.messages = [m for m in self.messages if (m.topic(), m.partition()) not in gone]

    def keep_error(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc

    def _spill(self) -> None:
        """Messages of a kept view, so that messages after it keep their order."""
        if self.view is not None:
            self.messages[:0] = list(self.view)
            self.view = None

    def _raise(self) -> None:
        if self.error is not None:
            exc, self.error = self.error, None
            raise exc

    def take_messages(self, count: int) -> list[Message]:
        """Up to ``count`` messages (for ``poll``: 1, ``consume``: ``num_messages``)."""
        if not self.messages and self.view is None:
            self._raise()
            return []
        self._spill()
        out, self.messages[:count] = self.messages[:count], []
        return out

    def take_view(self, max_records: int, headers: bool) -> RecordBatchView | None:
        """A view of what is held (None if nothing is): a kept view as it is, or the kept
        messages of one partition from the front (end-of-partition events are skipped, other
        errors raised, as ``Consumer.consume_batch`` does)."""
        if self.view is not None:
            view, self.view = self.view, None
            return view
        msgs = self.messages
        while msgs and msgs[0].error() is not None:
            err = msgs.pop(0).error()
            if err is not None and err.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(err)
        if not msgs:
            self._raise()
            return None
        first = msgs[0]
        n = 0
        while (n < len(msgs) and n < max_records and msgs[n].error() is None
               and msgs[n].topic() == first.topic() and msgs[n].partition() == first.partition()):
            n += 1
        taken, msgs[:n] = msgs[:n], []
        return view_from_messages(taken, headers)
