"""``Consumer``: confluent-kafka's Consumer API over the kafka_fast fetcher and group client.

Threads: the client's I/O thread runs the fetcher (a poll hook), offset look-ups and the group
state machine; the application thread calls ``poll``/``consume``/``consume_batch`` and runs
every user callback (rebalance and commit callbacks) inside those calls.

Fetched records wait in a queue of per-partition chunks of decoded columns. ``poll`` hands out
``Message`` objects built a few hundred at a time in one compiled loop; ``consume`` builds its
whole list that way; ``consume_batch`` builds none at all. The application position (and, with
``enable.auto.offset.store``, the stored offset) of a partition is the offset after the last
record handed out, exactly as if every record had been polled one by one.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures import wait as futures_wait
from typing import Any

from .._impl import load
from ..config import make_config
from ..config.consumer import OFFSET_RESET
from ..errors import ConfigError, KafkaError, KafkaException
from ..message import Message
from ..net import KafkaClient
from ..topic_partition import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    OFFSET_STORED,
    TopicPartition,
)
from .assignors import make_assignors
from .batch_view import RecordBatchView, eof_error
from .fetch_decode import Segment
from .fetcher import Chunk, Fetcher
from .group import ClassicGroup
from .group_kip848 import ConsumerGroupMember
from .offsets import OffsetClient, error_of
from .state import NEED_COMMITTED, NEED_NONE, NEED_RESET, PartitionState

_columns, _ = load("_columns", "columns")
append_messages = _columns.append_messages

E = KafkaError
_RESET = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END, "error": None}


def _timeout_s(timeout: float | None) -> float | None:
    """confluent's convention: None or a negative number waits forever."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, "
                        f"not {type(timeout).__name__}")
    if timeout < 0:
        return None
    return float(timeout)


def _weak_wakeup(consumer: Consumer) -> Callable[[], None]:
    """Wakes ``consumer``'s waiting poll() when a client event arrives (weakly bound)."""
    ref = weakref.ref(consumer)

    def wake() -> None:
        c = ref()
        if c is not None:
            with c._lock:
                c._cond.notify_all()

    return wake


def _release(client: KafkaClient, fetcher: Fetcher) -> None:
    """Finalizer of a consumer dropped without close(): stop fetching and the client."""
    fetcher.closed = True
    try:
        client.remove_poll_hook(fetcher.tick)
        client.close(0)
    except Exception:  # finalizers run at awkward times
        pass


def _check_patterns(topics: list[str]) -> None:
    """Raise _INVALID_ARG for a ``^regex`` subscription that does not compile."""
    for t in topics:
        if t.startswith("^"):
            try:
                re.compile(t)
            except re.error as exc:
                raise KafkaException(KafkaError(
                    E._INVALID_ARG, f"invalid subscription regex {t!r}: {exc}")) from None


class Consumer:
    """A Kafka consumer with confluent-kafka's API plus the columnar ``consume_batch``."""

    def __init__(self, conf: dict[str, Any] | None = None, **kwargs: Any) -> None:
        conf = dict(conf or {})
        conf.update(kwargs)
        self._conf = make_config(conf, "consumer")
        self._conf.require("bootstrap.servers")
        try:
            self._assignors = make_assignors(self._conf["partition.assignment.strategy"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self._conf["heartbeat.interval.ms"] >= self._conf["session.timeout.ms"]:
            raise ConfigError('"heartbeat.interval.ms" must be lower than "session.timeout.ms"')
        if self._conf["max.poll.interval.ms"] < self._conf["session.timeout.ms"]:
            raise ConfigError('"max.poll.interval.ms" must be >= "session.timeout.ms"')
        self._group_id: str = self._conf["group.id"]
        if not self._group_id:
            # confluent-kafka's error, word for word (a ValueError; ConfigError is one).
            raise ConfigError("Failed to create consumer: group.id must be set")
        self._reset_strategy = _RESET[OFFSET_RESET[self._conf["auto.offset.reset"]]]
        self._auto_commit = self._conf["enable.auto.commit"]
        self._auto_store = self._conf["enable.auto.offset.store"]
        self._commit_interval = self._conf["auto.commit.interval.ms"] / 1000.0
        self._on_commit: Callable | None = self._conf["on_commit"]
        self._per_chunk = self._conf["consume.messages.per.chunk"]

        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._parts: dict[tuple[str, int], PartitionState] = {}
        self._ready: deque[Chunk] = deque()
        self._queued_bytes = 0
        self._queued_records = 0
        self._events: deque = deque()
        self._topic_numbers: dict[str, int] = {}

        # poll() fast path: messages built from the current chunk, handed out by index.
        self._msgs: list[Message] = []
        self._idx = 0
        self._nmsgs = 0
        self._msgs_state: PartitionState | None = None
        self._msgs_version = -1
        self._msgs_end = -1
        # the chunk being consumed: segment index and record index inside it
        self._cur: Chunk | None = None
        self._cur_seg = 0
        self._cur_rec = 0

        self._closed = False
        self._last_poll = time.monotonic()
        self._next_auto_commit = time.monotonic() + self._commit_interval
        self._rejoin_on_poll = False
        self._subscription: list[str] | None = None
        self._callbacks: dict[str, Callable | None] = {}
        self._assign_called = False
        self._pending_commits: list[Future] = []

        self._client = KafkaClient(self._conf, name=self._conf["client.id"])
        self._offsets = OffsetClient(self._client, self._group_id)
        self._fetcher = Fetcher(self)
        self._group: ClassicGroup | ConsumerGroupMember | None = None
        self._client.events.listener = _weak_wakeup(self)
        self._client.start()
        self._client.add_poll_hook(self._fetcher.tick)
        # A consumer dropped without close() stops its client (the I/O thread holds only
        # weak references to it).
        self._finalizer = weakref.finalize(self, _release, self._client, self._fetcher)

    # -- helpers ---------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    def _post_event(self, event: tuple) -> None:
        with self._lock:
            self._events.append(event)
            self._cond.notify_all()

    def _post_error(self, err: KafkaError) -> None:
        self._post_event(("error", err))

    def _call_io(self, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Run ``fn`` on the I/O thread and wait for its result."""
        fut: Future = Future()

        def run() -> None:
            try:
                fut.set_result(fn())
            except BaseException as exc:  # handed to the caller
                fut.set_exception(exc)

        self._client.call_soon(run)
        return fut.result(timeout)

    def _topic_no(self, topic: str) -> int:
        n = self._topic_numbers.get(topic)
        if n is None:
            n = self._topic_numbers[topic] = len(self._topic_numbers)
        return n

    @staticmethod
    def _wait(fut: Future, timeout: float | None, what: str) -> Any:
        try:
            return fut.result(timeout)
        except FutureTimeout:
            raise KafkaException(KafkaError(E._TIMED_OUT, f"{what} timed out")) from None

    # -- assignment ------------------------------------------------------------------------------
    def _add_partitions(self, partitions: list[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                key = (tp.topic, tp.partition)
                ps = self._parts.get(key)
                if ps is None:
                    ps = self._parts[key] = PartitionState(tp.topic, tp.partition)
                self._apply_offset(ps, tp.offset, tp.leader_epoch)
        self._client.request_metadata(sorted({tp.topic for tp in partitions}))
        self._client.wakeup()

    def _apply_offset(self, ps: PartitionState, offset: int, leader_epoch: int | None) -> None:
        if offset >= 0:
            ps.set_position(offset, leader_epoch if leader_epoch is not None else -1)
        elif offset in (OFFSET_BEGINNING, OFFSET_END):
            ps.require(NEED_RESET, offset)
        elif offset in (OFFSET_STORED, OFFSET_INVALID):
            ps.require(NEED_COMMITTED if self._group_id else NEED_RESET, None)
        elif offset < OFFSET_END and offset > OFFSET_STORED:
            raise KafkaException(KafkaError(E._INVALID_ARG, f"invalid offset {offset}"))
        else:
            ps.require(NEED_COMMITTED if self._group_id else NEED_RESET, None)
        self._drop_buffered(ps)

    def _drop_buffered(self, ps: PartitionState) -> None:
        """Forget fetched but undelivered records of ``ps`` (caller holds the lock)."""
        if self._ready:
            keep = deque()
            for ch in self._ready:
                if ch.state is ps:
                    self._queued_bytes -= ch.nbytes
                    self._queued_records -= ch.count
                else:
                    keep.append(ch)
            self._ready = keep
        if self._cur is not None and self._cur.state is ps:
            self._cur = None
        if self._msgs_state is ps:
            self._msgs = []
            self._idx = self._nmsgs = 0
            self._msgs_state = None

    def _remove_partitions(self, keys) -> None:
        with self._lock:
            for key in keys:
                ps = self._parts.pop(key, None)
                if ps is not None:
                    ps.version += 1
                    self._drop_buffered(ps)

    def _settle(self) -> None:
        """Record the position reached by the poll() messages handed out so far."""
        ps = self._msgs_state
        if ps is None or self._idx == 0:
            return
        if ps.version != self._msgs_version:
            return
        last = self._msgs[self._idx - 1]
        if self._idx >= self._nmsgs:
            pos = self._msgs_end
        else:
            if last._error is not None:
                return
            pos = last._offset + 1
        self._move_position(ps, pos, last._leader_epoch if last._error is None else None)

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Consume exactly ``partitions`` (replacing the current assignment)."""
        self._check_open()
        self._assign_called = True
        self._settle()
        keep = {(tp.topic, tp.partition) for tp in partitions}
        self._remove_partitions([k for k in list(self._parts) if k not in keep])
        self._add_partitions(list(partitions))

    def unassign(self) -> None:
        """Stop consuming every partition."""
        self._check_open()
        self._assign_called = True
        self._settle()
        self._remove_partitions(list(self._parts))

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add ``partitions`` to the current assignment."""
        self._check_open()
        self._assign_called = True
        for tp in partitions:
            if (tp.topic, tp.partition) in self._parts:
                raise KafkaException(KafkaError(
                    E._CONFLICT, f"{tp.topic} [{tp.partition}] is already assigned"))
        self._add_partitions(list(partitions))

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove ``partitions`` from the current assignment."""
        self._check_open()
        self._assign_called = True
        self._settle()
        self._remove_partitions([(tp.topic, tp.partition) for tp in partitions])

    def assignment(self) -> list[TopicPartition]:
        """The partitions currently assigned."""
        self._check_open()
        with self._lock:
            return [TopicPartition(t, p) for t, p in sorted(self._parts)]

    # -- subscription ----------------------------------------------------------------------------
    def subscribe(self, topics: list[str], on_assign: Callable | None = None,
                  on_revoke: Callable | None = None, on_lost: Callable | None = None) -> None:
        """Join the group (``group.id``) for ``topics`` (names, or regexes starting with ^)."""
        self._check_open()
        if isinstance(topics, str) or not all(isinstance(t, str) and t for t in topics):
            raise TypeError("subscribe() expects a list of topic names")
        for cb in (on_assign, on_revoke, on_lost):
            if cb is not None and not callable(cb):
                raise TypeError("rebalance callbacks must be callable")
        _check_patterns(topics)
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self._subscription = list(topics)
        if self._group is None:
            if self._conf["group.protocol"] == "consumer":
                self._group = ConsumerGroupMember(self)
            else:
                self._group = ClassicGroup(self, self._assignors)
        group = self._group
        self._client.call_soon(lambda: group.subscribe(list(topics)))

    def unsubscribe(self) -> None:
        """Leave the group and drop the assignment."""
        self._check_open()
        group = self._group
        if group is None:
            return
        self._settle()
        if self._auto_commit:
            self._commit_sync_quietly()
        with self._lock:
            assigned = [TopicPartition(t, p) for t, p in sorted(self._parts)]
        if assigned and self._callbacks.get("revoke"):
            self._callbacks["revoke"](self, assigned)
        self._remove_partitions(list(self._parts))
        self._subscription = None
        self._group = None
        try:
            f = self._call_io(group.close, 5.0)
            if f is not None:
                f.result(5.0)
        except Exception:  # leaving is best effort
            pass

    # -- events (poll thread) --------------------------------------------------------------------
    def _serve_events(self) -> Message | None:
        """Run pending rebalance/commit callbacks; returns an error message to hand out."""
        while True:
            with self._lock:
                if not self._events:
                    return None
                ev = self._events.popleft()
            kind = ev[0]
            if kind == "error":
                return Message(error=ev[1])
            if kind == "commit":
                cb = self._on_commit
                if cb is not None:
                    cb(ev[1], ev[2])
                elif ev[1] is not None and len(ev) < 4:
                    # Without on_commit a failed commit is handed out like any other error
                    # (unless commit() already raised it).
                    return Message(error=ev[1])
            elif kind == "assign":
                self._rebalance_assign(ev[1], ev[2])
            elif kind == "revoke":
                self._rebalance_revoke(ev[1], ev[2], lost=False)
            elif kind == "lost":
                self._rebalance_revoke(ev[1], ev[2], lost=True)
            elif kind == "incremental":
                self._rebalance_incremental(ev[1], ev[2], ev[3])
            elif kind == "call":
                # Work the I/O thread leaves to this thread; it may return an error to hand out.
                err = ev[1]()
                if err is not None:
                    return Message(error=err)

    def _serve_client_events(self) -> None:
        """Client-level errors (connections, authentication, I/O thread failures) go to
        ``error_cb`` here, on the polling thread; a fatal one is raised."""
        client = self._client
        client.serve_events()
        fatal = client.events.fatal
        if fatal is not None:
            raise KafkaException(fatal)

    def _rebalance_assign(self, tps: list[tuple[str, int]], epoch: int) -> None:
        group = self._group
        if group is None or epoch != group.epoch:
            return
        parts = [TopicPartition(t, p) for t, p in tps]
        self._assign_called = False
        cb = self._callbacks.get("assign")
        if cb is not None:
            cb(self, parts)
        if not self._assign_called:
            self.assign(parts)

    def _rebalance_revoke(self, owned: dict[str, list[int]], epoch: int, lost: bool) -> None:
        group = self._group
        parts = [TopicPartition(t, p) for t, ps in sorted(owned.items()) for p in ps]
        self._settle()
        if not lost and self._auto_commit:
            self._commit_sync_quietly()
        cb = self._callbacks.get("lost" if lost else "revoke") or self._callbacks.get("revoke")
        self._assign_called = False
        if cb is not None and parts:
            cb(self, parts)
        if not self._assign_called:
            self._remove_partitions([(tp.topic, tp.partition) for tp in parts])
        if not lost and group is not None:
            self._client.call_soon(lambda: group.revoke_done(epoch))

    def _rebalance_incremental(self, added, revoked, epoch: int) -> None:
        group = self._group
        if group is None or epoch != group.epoch:
            return
        if revoked:
            parts = [TopicPartition(t, p) for t, p in revoked]
            self._settle()
            if self._auto_commit:
                self._commit_sync_quietly()
            self._assign_called = False
            cb = self._callbacks.get("revoke")
            if cb is not None:
                cb(self, parts)
            if not self._assign_called:
                self._remove_partitions(list(revoked))
        if added or not revoked:
            parts = [TopicPartition(t, p) for t, p in added]
            self._assign_called = False
            cb = self._callbacks.get("assign")
            if cb is not None:
                cb(self, parts)
            if not self._assign_called and parts:
                self._add_partitions(parts)
        self._client.call_soon(lambda: group.incremental_revoke_done(epoch))

    # -- delivery -------------------------------------------------------------------------------
    def _next_chunk(self) -> Chunk | None:
        """The chunk to read from next (caller holds the lock)."""
        cur = self._cur
        if cur is not None:
            return cur
        ready = self._ready
        while ready:
            ch = ready.popleft()
            self._queued_bytes -= ch.nbytes
            self._queued_records -= ch.count
            ps = ch.state
            if ch.version != ps.version or ps.paused or \
                    self._parts.get((ps.topic, ps.partition)) is not ps:
                continue
            self._cur = ch
            self._cur_seg = 0
            self._cur_rec = ch.segments[0].start if ch.segments else 0
            if not self._ready or self._queued_records < self._fetcher.queue_min_records // 2:
                self._client.wakeup()
            return ch
        return None

    def _take(self, limit: int, out: list | None, pieces: list | None) -> tuple[int, Any]:
        """Take up to ``limit`` records from the current chunk (one partition).

        Appends Messages to ``out`` or ``(topic no, partition, Segment)`` to ``pieces``.
        Returns ``(count, (state, version, end position))`` or ``(0, None)`` with no data.
        """
        with self._lock:
            ch = self._next_chunk()
            if ch is None:
                return 0, None
        ps = ch.state
        if ch.eof or (ch.error is not None and not ch.segments):
            self._cur = None
            err = ch.error or eof_error(ps.topic, ps.partition, ch.next_offset)
            end = -1 if ch.eof else ch.next_offset
            if out is None:
                if ch.error is not None:
                    self._post_error(ch.error)
                return 0, (ps, ch.version, end, -1)
            out.append(Message(ps.topic, ps.partition, ch.next_offset, error=err))
            return 1, (ps, ch.version, end, -1)
        taken = 0
        segs = ch.segments
        end = ch.next_offset
        epoch = -1
        while taken < limit and self._cur_seg < len(segs):
            seg = segs[self._cur_seg]
            start = self._cur_rec
            n = min(limit - taken, seg.stop - start)
            if out is not None:
                append_messages(out, ps.topic, ps.partition, seg.cols, start, start + n,
                                seg.timestamp_type, seg.leader_epoch)
            else:
                pieces.append((self._topic_no(ps.topic), ps.partition,
                               Segment(seg.cols, start, start + n, seg.timestamp_type,
                                       seg.leader_epoch)))
            taken += n
            if n:
                epoch = seg.leader_epoch
            if start + n >= seg.stop:
                self._cur_seg += 1
                if self._cur_seg < len(segs):
                    self._cur_rec = segs[self._cur_seg].start
            else:
                self._cur_rec = start + n
                end = int(seg.cols.offsets[start + n - 1]) + 1
                break
        if self._cur_seg >= len(segs):
            self._cur = None
            end = ch.next_offset
            if ch.error is not None:
                if out is not None:
                    out.append(Message(ps.topic, ps.partition, end, error=ch.error))
                else:
                    self._post_error(ch.error)
        return taken, (ps, ch.version, end, epoch)

    def _advance(self, info) -> None:
        """Apply the position reached by records handed out at once (consume paths)."""
        ps, version, end, epoch = info
        if end < 0 or ps.version != version:
            return
        self._move_position(ps, end, epoch)

    def _move_position(self, ps: PartitionState, position: int, epoch: int | None) -> None:
        """The application has received every record before ``position``; the last of them
        has leader epoch ``epoch`` (None or -1 when unknown)."""
        if position > ps.position or ps.position < 0:
            ps.position = position
            if epoch is not None and epoch >= 0:
                ps.leader_epoch = epoch
            if self._auto_store:
                ps.stored = position
                ps.stored_epoch = ps.leader_epoch

    def _before_delivery(self) -> Message | None:
        self._check_open()
        self._settle()
        if self._idx >= self._nmsgs:
            self._msgs_state = None
        self._last_poll = time.monotonic()
        if self._rejoin_on_poll and self._group is not None:
            self._rejoin_on_poll = False
            group = self._group
            self._client.call_soon(group._start_join)
        self._serve_client_events()
        err = self._serve_events()
        if err is not None:
            return err
        if self._auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self._commit_interval
            self._auto_commit_async()
        return None

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next message or event, or None after ``timeout`` seconds (None/-1: forever)."""
        i = self._idx
        if i < self._nmsgs:
            self._idx = i + 1
            return self._msgs[i]
        return self._poll_slow(timeout)

    def _poll_slow(self, timeout: float | None) -> Message | None:
        deadline = None if _timeout_s(timeout) is None else time.monotonic() + timeout
        while True:
            err = self._before_delivery()
            if err is not None:
                return err
            out: list[Message] = []
            while True:
                count, info = self._take(self._per_chunk, out, None)
                if info is None:
                    break
                if count:
                    self._msgs = out
                    self._nmsgs = len(out)
                    self._idx = 1
                    self._msgs_state, self._msgs_version, self._msgs_end, _ = info
                    if out[0]._error is not None:
                        self._msgs_end = -1
                    return out[0]
                self._advance(info)
            if not self._wait_for_data(deadline):
                return None

    def _wait_for_data(self, deadline: float | None) -> bool:
        """Block until data or an event arrives; False once ``deadline`` passed."""
        with self._lock:
            if self._ready or self._events or self._closed or \
                    not self._client.events.queue.empty():
                return True
            if deadline is None:
                self._cond.wait(1.0)
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self._cond.wait(min(remaining, 1.0))
        return deadline is None or time.monotonic() < deadline or bool(self._ready)

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to ``num_messages`` messages; returns early when ``timeout`` seconds pass."""
        if not isinstance(num_messages, int) or not 0 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        deadline = None if _timeout_s(timeout) is None else time.monotonic() + timeout
        out: list[Message] = []
        err = self._before_delivery()
        if err is not None:
            out.append(err)
        # Messages already built for poll() come first.
        if self._idx < self._nmsgs:
            rest = self._msgs[self._idx:self._idx + num_messages - len(out)]
            out.extend(rest)
            self._idx += len(rest)
            self._settle()
        while len(out) < num_messages:
            count, info = self._take(num_messages - len(out), out, None)
            if info is not None:
                self._advance(info)
                continue
            if out:
                # Return what is here rather than wait for a full list.
                with self._lock:
                    if not self._ready:
                        break
                continue
            if not self._wait_for_data(deadline):
                break
            err = self._before_delivery()
            if err is not None:
                out.append(err)
        return out

    def consume_batch(self, max_records: int = 100_000, timeout: float | None = 1.0,
                      headers: bool = False) -> RecordBatchView:
        """Up to ``max_records`` records as one ``RecordBatchView`` (columns, no per-record
        objects). Waits up to ``timeout`` seconds for the first records; errors are raised as
        ``KafkaException``; end-of-partition events are not part of a view."""
        if isinstance(max_records, bool) or not isinstance(max_records, int):
            raise TypeError(f"max_records must be an int, not {type(max_records).__name__}")
        if max_records < 1:
            raise ValueError("max_records must be at least 1")
        deadline = None if _timeout_s(timeout) is None else time.monotonic() + timeout
        pieces: list = []
        total = 0
        err = self._before_delivery()
        if err is not None:
            raise KafkaException(err._error)
        if self._idx < self._nmsgs:
            # Records already built for poll(): deliver those through the view too.
            taken = self._msgs[self._idx:self._idx + max_records]
            self._idx += len(taken)
            self._settle()
            rest = [msg for msg in taken if msg._error is None]
            if rest:
                return self._view_from_messages(rest, headers)
        while total < max_records:
            count, info = self._take(max_records - total, None, pieces)
            if info is not None:
                total += count
                self._advance(info)
                continue
            if total:
                break
            if not self._wait_for_data(deadline):
                break
            err = self._before_delivery()
            if err is not None:
                raise KafkaException(err._error)
        topics = sorted(self._topic_numbers, key=self._topic_numbers.get)
        used = sorted({t for t, _, _ in pieces})
        remap = {old: new for new, old in enumerate(used)}
        pieces = [(remap[t], p, s) for t, p, s in pieces]
        return RecordBatchView(pieces, [topics[i] for i in used], with_headers=headers)

    def _view_from_messages(self, msgs: list[Message], headers: bool) -> RecordBatchView:
        import numpy as np

        from ..records import Columns

        def packed(fields):
            nulls = np.array([f is None for f in fields], dtype=bool)
            sizes = np.array([0 if f is None else len(f) for f in fields], dtype=np.int64)
            offs = np.zeros(len(fields) + 1, np.int64)
            np.cumsum(sizes, out=offs[1:])
            data = np.frombuffer(b"".join(f for f in fields if f is not None), np.uint8)
            return (data, offs), nulls

        keys, kn = packed([msg._key for msg in msgs])
        values, vn = packed([msg._value for msg in msgs])
        cols = Columns(np.array([msg._offset for msg in msgs], np.int64),
                       np.array([msg._timestamp for msg in msgs], np.int64), keys, values, kn, vn,
                       [msg._headers for msg in msgs])
        first = msgs[0]
        seg = Segment(cols, 0, len(msgs), first._timestamp_type,
                      first._leader_epoch if first._leader_epoch is not None else -1)
        return RecordBatchView([(0, first._partition, seg)], [first._topic], headers)

    # -- positions and offsets -----------------------------------------------------------------
    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The next offset the application will receive, per partition (OFFSET_INVALID if
        not known yet)."""
        self._check_open()
        self._settle()
        out = []
        with self._lock:
            for tp in partitions:
                ps = self._parts.get((tp.topic, tp.partition))
                pos = ps.position if ps is not None and ps.position >= 0 else OFFSET_INVALID
                out.append(TopicPartition(tp.topic, tp.partition, pos))
        return out

    def seek(self, partition: TopicPartition) -> None:
        """Move the fetch position of an assigned partition (offset or OFFSET_BEGINNING/END)."""
        self._check_open()
        with self._lock:
            ps = self._parts.get((partition.topic, partition.partition))
            if ps is None:
                raise KafkaException(KafkaError(
                    E._STATE, f"{partition.topic} [{partition.partition}] is not assigned"))
            if self._msgs_state is ps:
                self._msgs_state = None
                self._msgs = []
                self._idx = self._nmsgs = 0
            self._apply_offset(ps, partition.offset, partition.leader_epoch)
        self._client.wakeup()

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching ``partitions``; undelivered fetched records are dropped and fetched
        again after ``resume``."""
        self._check_open()
        self._settle()
        with self._lock:
            for tp in partitions:
                ps = self._parts.get((tp.topic, tp.partition))
                if ps is None or ps.paused:
                    continue
                ps.paused = True
                ps.version += 1
                if ps.need == NEED_NONE and ps.position >= 0:
                    ps.fetch_offset = ps.position
                self._drop_buffered(ps)

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Fetch paused ``partitions`` again from their positions."""
        self._check_open()
        with self._lock:
            for tp in partitions:
                ps = self._parts.get((tp.topic, tp.partition))
                if ps is not None and ps.paused:
                    ps.paused = False
                    ps.version += 1
                    if ps.need == NEED_NONE and ps.position >= 0:
                        ps.fetch_offset = ps.position
        self._client.wakeup()

    def store_offsets(self, message: Message | None = None,
                      offsets: list[TopicPartition] | None = None) -> None:
        """Store offsets for the next commit: ``message``'s offset + 1, or ``offsets`` as given."""
        self._check_open()
        if (message is None) == (offsets is None):
            raise ValueError("store_offsets() takes exactly one of message or offsets")
        if message is not None:
            if message.error() is not None:
                raise KafkaException(KafkaError(E._INVALID_ARG,
                                                "cannot store the offset of an error message"))
            offsets = [TopicPartition(message.topic(), message.partition(), message.offset() + 1,
                                      leader_epoch=message.leader_epoch())]
        with self._lock:
            for tp in offsets:
                ps = self._parts.get((tp.topic, tp.partition))
                if ps is None:
                    raise KafkaException(KafkaError(
                        E._STATE, f"{tp.topic} [{tp.partition}] is not assigned"))
                ps.stored = tp.offset
                ps.stored_metadata = tp.metadata
                ps.stored_epoch = tp.leader_epoch if tp.leader_epoch is not None else -1

    def _stored_offsets(self, only_changed: bool) -> list[TopicPartition]:
        out = []
        with self._lock:
            for (t, p), ps in sorted(self._parts.items()):
                if ps.stored < 0 or (only_changed and ps.stored == ps.committed):
                    continue
                out.append(TopicPartition(t, p, ps.stored, ps.stored_metadata,
                                          ps.stored_epoch if ps.stored_epoch >= 0 else None))
        return out

    def _generation(self) -> tuple[int, str, str | None]:
        g = self._group
        if g is None:
            return -1, "", None
        return g.generation, g.member_id, g.instance_id

    def _send_commit(self, offsets: list[TopicPartition], timeout: float) -> Future:
        fut = self._offsets.commit(offsets, self._generation, timeout)

        def done(f: Future) -> None:
            if f.exception() is None:
                with self._lock:
                    for tp in offsets:
                        ps = self._parts.get((tp.topic, tp.partition))
                        if ps is not None and tp.offset > ps.committed:
                            ps.committed = tp.offset
            else:
                err = error_of(f.exception())
                if err.code() in (E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID,
                                  E.REBALANCE_IN_PROGRESS) and self._group is not None:
                    group = self._group
                    self._client.call_soon(lambda: group._handle_group_error(err.code(),
                                                                             "OffsetCommit"))

        fut.add_done_callback(done)
        return fut

    def _commit_async_report(self, offsets: list[TopicPartition]) -> None:
        fut = self._send_commit(offsets, self._conf["request.timeout.ms"] / 1000 * 2)

        def report(f: Future) -> None:
            exc = f.exception()
            if exc is None:
                self._post_event(("commit", None, f.result()))
            else:
                err = error_of(exc)
                self._post_event(("commit", err, [
                    TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata,
                                   tp.leader_epoch, err) for tp in offsets]))

        fut.add_done_callback(report)

    def _auto_commit_async(self) -> None:
        offsets = self._stored_offsets(only_changed=True)
        if offsets:
            self._commit_async_report(offsets)

    def _commit_sync_quietly(self) -> None:
        offsets = self._stored_offsets(only_changed=True)
        if not offsets:
            return
        try:
            result = self._send_commit(offsets, 10.0).result(15.0)
            self._post_event(("commit", None, result))
        except Exception as exc:  # reported through on_commit
            err = error_of(exc) if not isinstance(exc, FutureTimeout) else \
                KafkaError(E._TIMED_OUT, "commit timed out")
            self._post_event(("commit", err, offsets))

    def commit(self, message: Message | None = None,
               offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commit ``message``'s offset + 1, ``offsets``, or (neither) every stored offset.

        Synchronous commits return the committed partitions or raise ``KafkaException``;
        asynchronous ones report through ``on_commit`` from a later poll.
        """
        self._check_open()
        if message is not None and offsets is not None:
            raise ValueError("commit() takes message or offsets, not both")
        self._settle()
        if message is not None:
            if message.error() is not None:
                raise KafkaException(KafkaError(E._INVALID_ARG,
                                                "cannot commit the offset of an error message"))
            offsets = [TopicPartition(message.topic(), message.partition(), message.offset() + 1,
                                      leader_epoch=message.leader_epoch())]
        elif offsets is None:
            offsets = self._stored_offsets(only_changed=False)
        else:
            offsets = list(offsets)
            for tp in offsets:
                if tp.offset < 0:
                    raise KafkaException(KafkaError(
                        E._INVALID_ARG, f"invalid commit offset {tp.offset} for "
                                        f"{tp.topic} [{tp.partition}]"))
        if not offsets:
            raise KafkaException(KafkaError(E._NO_OFFSET, "no offsets to commit"))
        if asynchronous:
            self._commit_async_report(offsets)
            return None
        fut = self._send_commit(offsets, self._conf["request.timeout.ms"] / 1000 * 2)
        try:
            result = self._wait(fut, None, "commit")
        except KafkaException as exc:
            self._post_event(("commit", exc.args[0], offsets, "raised"))
            raise
        self._post_event(("commit", None, result))
        return result

    def committed(self, partitions: list[TopicPartition],
                  timeout: float | None = None) -> list[TopicPartition]:
        """The group's committed offsets for ``partitions`` (OFFSET_INVALID where none)."""
        self._check_open()
        wait = _timeout_s(timeout)
        fut = self._offsets.fetch_committed([(tp.topic, tp.partition) for tp in partitions],
                                            wait if wait is not None else 30.0)
        found = self._wait(fut, wait, "committed()")
        out = []
        for tp in partitions:
            offset, metadata, epoch = found.get((tp.topic, tp.partition), (-1, None, -1))
            out.append(TopicPartition(tp.topic, tp.partition,
                                      offset if offset >= 0 else OFFSET_INVALID,
                                      metadata or None, epoch if epoch >= 0 else None))
        return out

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int] | None:
        """``(low, high)`` watermarks; ``cached`` uses the last fetch's values (None if
        there are none)."""
        self._check_open()
        key = (partition.topic, partition.partition)
        if cached:
            with self._lock:
                ps = self._parts.get(key)
                if ps is None or ps.high_watermark < 0:
                    return None
                return (ps.log_start_offset, ps.high_watermark)
        wait = _timeout_s(timeout)
        # Both look-ups are in flight together: one round trip, not two.
        low_fut = self._offsets.list_offsets({key: -2}, wait or 30.0)
        high_fut = self._offsets.list_offsets({key: -1}, wait or 30.0, isolation_level=0)
        low = self._wait(low_fut, wait, "get_watermark_offsets()")[key][0]
        high = self._wait(high_fut, wait, "get_watermark_offsets()")[key][0]
        return (low, high)

    def offsets_for_times(self, partitions: list[TopicPartition],
                          timeout: float | None = None) -> list[TopicPartition]:
        """For each partition (``offset`` holding a timestamp in ms) the earliest offset whose
        timestamp is at or after it (-1 when there is none)."""
        self._check_open()
        wait = _timeout_s(timeout)
        wanted = {(tp.topic, tp.partition): tp.offset for tp in partitions}
        fut = self._offsets.list_offsets(wanted, wait or 30.0)
        found = self._wait(fut, wait, "offsets_for_times()")
        out = []
        for tp in partitions:
            offset, epoch, _ = found[(tp.topic, tp.partition)]
            out.append(TopicPartition(tp.topic, tp.partition, offset,
                                      leader_epoch=epoch if epoch >= 0 else None))
        return out

    def cluster_id(self, timeout: float = -1) -> str | None:
        """The cluster id from broker metadata (None if ``timeout`` seconds pass first)."""
        return self._client.cluster_id(timeout)

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """SASL PLAIN/SCRAM credentials for the next logins; open connections keep theirs."""
        self._client.set_sasl_credentials(username, password)

    def list_topics(self, topic: str | None = None, timeout: float = -1):
        """Cluster metadata in confluent-kafka's ClusterMetadata shape."""
        self._check_open()
        from ..admin.metadata import cluster_metadata

        wait = _timeout_s(timeout)
        fut = self._client.request_metadata([topic] if topic else None, all_topics=not topic)
        view = self._wait(fut, wait, "list_topics()")
        return cluster_metadata(view, [topic] if topic else None)

    def memberid(self) -> str | None:
        """The group member id (None before the first join)."""
        self._check_open()
        g = self._group
        return g.member_id if g is not None and g.member_id else None

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """The group's identity for ``Producer.send_offsets_to_transaction``."""
        self._check_open()
        if not self._group_id:
            raise KafkaException(KafkaError(E._UNKNOWN_GROUP, "no group.id configured"))
        generation, member, instance = self._generation()
        return ConsumerGroupMetadata(self._group_id, generation, member, instance)

    # -- closing --------------------------------------------------------------------------------
    def close(self) -> None:
        """Commit (when auto commit is on), leave the group and stop the client."""
        if self._closed:
            return
        try:
            self._settle()
            if self._auto_commit:
                self._commit_sync_quietly()
            group = self._group
            if group is not None:
                with self._lock:
                    assigned = [TopicPartition(t, p) for t, p in sorted(self._parts)]
                cb = self._callbacks.get("revoke")
                if assigned and cb is not None:
                    try:
                        cb(self, assigned)
                    except Exception:  # closing goes on
                        pass
                try:
                    f = self._call_io(group.close, 5.0)
                    if f is not None:
                        f.result(5.0)
                except Exception:  # leaving is best effort
                    pass
            try:
                futures_wait(self._call_io(self._fetcher.shutdown, 2.0), timeout=1.0)
            except Exception:  # closing fetch sessions is best effort
                pass
            # Deliver outstanding commit callbacks.
            with self._lock:
                events = [e for e in self._events if e[0] == "commit"]
                self._events.clear()
            if self._on_commit is not None:
                for ev in events:
                    try:
                        self._on_commit(ev[1], ev[2])
                    except Exception:
                        pass
        finally:
            self._closed = True
            self._fetcher.closed = True
            self._msgs = []
            self._idx = self._nmsgs = 0
            with self._lock:
                self._cond.notify_all()
            self._client.remove_poll_hook(self._fetcher.tick)
            self._client.close()
            self._finalizer.detach()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ConsumerGroupMetadata:
    """Group id, generation, member id and instance id (for transactional offset commits)."""

    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id")

    def __init__(self, group_id: str, generation_id: int = -1, member_id: str = "",
                 group_instance_id: str | None = None) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    def __repr__(self) -> str:
        return (f"ConsumerGroupMetadata(group_id={self.group_id!r}, "
                f"generation_id={self.generation_id}, member_id={self.member_id!r})")
