"""``Consumer``: confluent-kafka's Consumer API over the kafka_fast fetcher and group client.

Threads: the client's I/O thread runs the fetcher (a poll hook), offset look-ups and the group
member's state machine; the application thread calls ``poll``/``consume``/``consume_batch``
and runs every user callback (rebalance and commit callbacks) inside those calls.

The parts, each owning its state: ``FetchState`` (what the two threads share: fetched chunks,
commands for the fetcher, events for the polling thread), ``Fetcher`` and its ``Validator``
(I/O thread; the fetch cursors), ``Delivery`` (the read cursor and the messages built ahead
for ``poll``), ``Committer`` (stored offsets and commits) and a ``GroupMember`` (classic or
KIP-848) that reports through events. This module keeps the application positions
(``AppPosition``), assigns partitions, seeks, pauses, runs rebalance callbacks and closes;
every change to fetching goes to the fetcher as a command.
"""

from __future__ import annotations

import logging
import time
import warnings
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as futures_wait
from typing import Any

from ..cluster.listing import fetch_cluster_metadata
from ..config import client_config
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
from .batch_view import RecordBatchView
from .commits import Committer, wait_for
from .delivery import Delivery, view_from_messages
from .fetch_state import FetchState
from .fetcher import Fetcher
from .group import ClassicGroup
from .group_kip848 import ConsumerGroupMember
from .group_stats import GroupStats
from .membership import GroupMember
from .offsets import OffsetClient
from .state import AppPosition
from .subscription import SubscriptionWatch, check_subscription

E = KafkaError
log = logging.getLogger("kafka_fast.consumer")


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


def _release(client: KafkaClient, fetcher: Fetcher) -> None:
    """Finalizer of a consumer dropped without close(): stop fetching and the client."""
    fetcher.release()
    try:
        client.remove_poll_hook(fetcher.tick)
        client.close(0)
    except Exception:  # finalizers run at awkward times
        log.debug("closing a dropped consumer's client failed", exc_info=True)


def _check_offset(offset: int) -> None:
    """Refuse an offset that is neither an offset nor one of the logical ones."""
    if offset not in (OFFSET_BEGINNING, OFFSET_END) and OFFSET_END > offset > OFFSET_STORED:
        raise KafkaException(KafkaError.of(E._INVALID_ARG, f"invalid offset {offset}"))


def _after(message: Message, verb: str) -> TopicPartition:
    """The position after ``message`` (to store or commit); OFFSET_INVALID for a message
    without an offset (one made by the application), which stores or commits nothing."""
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if message.error() is not None or topic is None or partition is None:
        raise KafkaException(KafkaError.of(E._INVALID_ARG,
                                        f"cannot {verb} the offset of an error message"))
    if offset is None:
        return TopicPartition(topic, partition, OFFSET_INVALID)
    return TopicPartition(topic, partition, offset + 1, leader_epoch=message.leader_epoch())


class _NotStarted:
    """The read cursor of a consumer whose ``__init__`` did not run (a subclass may skip it):
    empty, so ``poll()`` reaches the closed check."""

    idx = 0
    nmsgs = 0
    msgs: list = []


class Consumer:
    """A Kafka consumer with confluent-kafka's API plus the columnar ``consume_batch``."""

    # Until __init__ has run, the consumer reads as closed (confluent-kafka's "Consumer
    # closed" / "Handle has been closed" errors).
    _closed = True
    _delivery: Delivery = _NotStarted()  # type: ignore[assignment]

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._conf = client_config(conf, kwargs, "consumer")
        try:
            self._assignors = make_assignors(self._conf["partition.assignment.strategy"])
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if self._conf["heartbeat.interval.ms"] >= self._conf["session.timeout.ms"]:
            # librdkafka builds this consumer too; its group sessions then expire.
            warnings.warn('"heartbeat.interval.ms" is not lower than "session.timeout.ms": the '
                          "group coordinator will end this member's sessions", stacklevel=2)
        if self._conf["max.poll.interval.ms"] < self._conf["session.timeout.ms"]:
            raise ConfigError('"max.poll.interval.ms" must be >= "session.timeout.ms"')
        self._group_id: str = self._conf["group.id"]
        if not self._group_id:
            # confluent-kafka's error, word for word (a ValueError; ConfigError is one).
            raise ConfigError("Failed to create consumer: group.id must be set")
        self._on_commit: Callable | None = self._conf["on_commit"]

        self._closed = False
        self._subscription: list[str] | None = None
        self._callbacks: dict[str, Callable | None] = {}
        self._assign_called = False
        self._group: GroupMember | None = None
        self._subscription_watch: SubscriptionWatch | None = None

        self._state = state = FetchState()
        self._client = KafkaClient(self._conf, name=self._conf["client.id"],
                                   client_type="consumer")
        # Statistics: fetched records are counted per chunk; the snapshot reads the
        # partition states and the group under their locks.
        self._group_stats = GroupStats(state)
        state.recorder = self._client.stats.counters
        sources = self._client.stats.sources
        sources.consumer = state.partition_snapshot
        sources.group = self._group_stats
        sources.read_committed = self._conf["isolation.level"] == "read_committed"
        self._offsets = OffsetClient(self._client, self._group_id)
        self._fetcher = Fetcher(state, self._client, self._conf, self._offsets)
        self._delivery = Delivery(state, self._conf["enable.auto.offset.store"],
                                  self._conf["consume.messages.per.chunk"], self._client.wakeup)
        self._delivery.refill_below = self._fetcher.queue_min_records // 2
        self._commits = Committer(state, self._offsets, lambda: self._group,
                                  self._conf["request.timeout.ms"],
                                  self._conf["enable.auto.commit"],
                                  self._conf["auto.commit.interval.ms"],
                                  self._conf["session.timeout.ms"])
        # The client's events wake a waiting poll(); the I/O thread holds no reference to the
        # consumer itself.
        self._client.events.listener = state.notify
        self._client.start()
        self._client.add_poll_hook(self._fetcher.tick)
        # A consumer dropped without close() stops its client.
        self._finalizer = weakref.finalize(self, _release, self._client, self._fetcher)

    # -- helpers ---------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    def _check_handle(self) -> None:
        """The closed check of the client-level calls, in confluent-kafka's words."""
        if self._closed:
            raise RuntimeError("Handle has been closed")

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

    # -- assignment ------------------------------------------------------------------------------
    def _add_partitions(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            _check_offset(tp.offset)
        state = self._state
        with state.lock:
            for tp in partitions:
                key = (tp.topic, tp.partition)
                app = state.parts.get(key)
                if app is None:
                    app = state.parts[key] = AppPosition(tp.topic, tp.partition)
                self._seek_to(app, tp.offset, tp.leader_epoch)
        self._client.request_metadata(sorted({tp.topic for tp in partitions}))
        self._client.wakeup()

    def _seek_to(self, app: AppPosition, offset: int, leader_epoch: int | None) -> None:
        """Go on from an assigned or sought offset (state lock held): what was fetched is
        dropped and the fetcher told where to fetch from."""
        epoch = leader_epoch if leader_epoch is not None else -1
        state = self._state
        state.drop_buffered(app)
        gen = app.moved(offset, epoch) if offset >= 0 else app.moved(None)
        state.command(("seek", app, gen, offset, epoch, app.paused))

    def _remove(self, keys: list[tuple[str, int]]) -> None:
        self._state.remove(keys)
        self._client.wakeup()

    def _assigned(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in self._state.assigned()]

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Consume exactly ``partitions`` (replacing the current assignment)."""
        self._check_open()
        self._assign_called = True
        self._delivery.settle()
        keep = {(tp.topic, tp.partition) for tp in partitions}
        self._remove([k for k in self._state.assigned() if k not in keep])
        self._add_partitions(list(partitions))

    def unassign(self) -> None:
        """Stop consuming every partition."""
        self._check_open()
        self._assign_called = True
        self._delivery.settle()
        self._remove(self._state.assigned())

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add ``partitions`` to the current assignment."""
        self._check_open()
        self._assign_called = True
        assigned = set(self._state.assigned())
        for tp in partitions:
            if (tp.topic, tp.partition) in assigned:
                raise KafkaException(KafkaError.of(
                    E._CONFLICT, f"{tp.topic} [{tp.partition}] is already assigned"))
        self._add_partitions(list(partitions))

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove ``partitions`` from the current assignment."""
        self._check_open()
        self._assign_called = True
        self._delivery.settle()
        self._remove([(tp.topic, tp.partition) for tp in partitions])

    def assignment(self) -> list[TopicPartition]:
        """The partitions currently assigned."""
        self._check_open()
        return self._assigned()

    # -- subscription ----------------------------------------------------------------------------
    def subscribe(self, topics: list[str], on_assign: Callable | None = None,
                  on_revoke: Callable | None = None, on_lost: Callable | None = None) -> None:
        """Join the group (``group.id``) for ``topics`` (names, or regexes starting with ^)."""
        self._check_open()
        topics = check_subscription(topics)
        for cb in (on_assign, on_revoke, on_lost):
            if cb is not None and not callable(cb):
                raise TypeError("rebalance callbacks must be callable")
        self._callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self._subscription = list(topics)
        if self._group is None:
            if self._conf["group.protocol"] == "consumer":
                self._group = ConsumerGroupMember(self._client, self._conf, self._state)
            else:
                self._group = ClassicGroup(self._client, self._conf, self._state,
                                           self._assignors)
        group = self._group
        self._group_stats.member = group
        self._client.call_soon(lambda: group.subscribe(list(topics)))
        if self._conf["group.protocol"] != "consumer":
            # As librdkafka: topics the cluster lacks come back from poll() as errors (the
            # KIP-848 protocol reports none).
            if self._subscription_watch is None:
                self._subscription_watch = SubscriptionWatch(self._client, self._state.post)
            watch = self._subscription_watch
            self._client.call_soon(lambda: watch.watch(topics))

    def _leave(self, group: GroupMember) -> None:
        """Leave the group (best effort, bounded)."""
        try:
            f = self._call_io(group.close, 5.0)
            if f is not None:
                f.result(5.0)
        except Exception:  # leaving is best effort: the coordinator times the member out
            log.warning("leaving group %r failed", self._group_id, exc_info=True)

    def unsubscribe(self) -> None:
        """Leave the group and drop the assignment."""
        self._check_open()
        group = self._group
        if group is None:
            return
        self._delivery.settle()
        self._commits.commit_before_revoke()
        assigned = self._assigned()
        revoke = self._callbacks.get("revoke")
        if assigned and revoke is not None:
            revoke(self, assigned)
        self._remove(self._state.assigned())
        self._subscription = None
        self._group = None
        self._group_stats.member = None
        watch = self._subscription_watch
        if watch is not None:
            self._client.call_soon(watch.stop)
        self._leave(group)

    # -- events (poll thread) --------------------------------------------------------------------
    def _serve_events(self) -> Message | None:
        """Run pending rebalance/commit callbacks; returns an error message to hand out."""
        while True:
            ev = self._state.next_event()
            if ev is None:
                return None
            kind = ev[0]
            if kind == "error":
                return Message(error=ev[1])
            if kind == "message":  # an error event with its topic (SubscriptionWatch)
                msg: Message = ev[1]
                return msg
            if kind == "commit":
                if ev[1] is None:
                    self._commits.note_committed(ev[2])
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
        self._group_stats.rebalance_cnt += 1
        self._assign_called = False
        cb = self._callbacks.get("assign")
        if cb is not None:
            cb(self, parts)
        if not self._assign_called:
            self.assign(parts)

    def _rebalance_revoke(self, owned: dict[str, list[int]], epoch: int, lost: bool) -> None:
        group = self._group
        # Only what the application was given: an assignment whose event went stale (a new
        # rebalance began before this thread saw it) was never handed to on_assign.
        assigned = set(self._state.assigned())
        parts = [TopicPartition(t, p) for t, ps in sorted(owned.items()) for p in ps
                 if (t, p) in assigned]
        self._group_stats.rebalance_cnt += 1
        self._delivery.settle()
        if not lost:
            self._commits.commit_before_revoke()
        cb = self._callbacks.get("lost" if lost else "revoke") or self._callbacks.get("revoke")
        self._assign_called = False
        if cb is not None and parts:
            cb(self, parts)
        if not self._assign_called:
            self._remove([(tp.topic, tp.partition) for tp in parts])
        if not lost and group is not None:
            self._client.call_soon(lambda: group.revoke_done(epoch))

    def _rebalance_incremental(self, added: list, revoked: list, epoch: int) -> None:
        group = self._group
        if group is None or epoch != group.epoch:
            return
        self._group_stats.rebalance_cnt += 1
        if revoked:
            parts = [TopicPartition(t, p) for t, p in revoked]
            self._delivery.settle()
            self._commits.commit_before_revoke()
            self._assign_called = False
            cb = self._callbacks.get("revoke")
            if cb is not None:
                cb(self, parts)
            if not self._assign_called:
                self._remove(list(revoked))
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
    def _before_delivery(self) -> Message | None:
        self._check_open()
        delivery = self._delivery
        delivery.settle()
        delivery.after_settle()
        group = self._group
        if group is not None:
            group.poll_watch.polled()
        self._serve_client_events()
        err = self._serve_events()
        if err is not None:
            return err
        self._commits.auto_commit_if_due()
        return None

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next message or event, or None after ``timeout`` seconds (None/-1: forever)."""
        d = self._delivery
        i = d.idx
        if i < d.nmsgs:
            d.idx = i + 1
            return d.msgs[i]
        return self._poll_slow(timeout)

    def _poll_slow(self, timeout: float | None) -> Message | None:
        wait = _timeout_s(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            err = self._before_delivery()
            if err is not None:
                return err
            msg = self._delivery.next_message()
            if msg is not None:
                return msg
            if not self._wait_for_data(deadline):
                return None

    def _wait_for_data(self, deadline: float | None) -> bool:
        """Block until data or an event arrives; False once ``deadline`` passed."""
        state = self._state
        with state.lock:
            if state.ready or state.events or self._closed or \
                    not self._client.events.queue.empty():
                return True
            if deadline is None:
                state.cond.wait(1.0)
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            state.cond.wait(min(remaining, 1.0))
        return deadline is None or time.monotonic() < deadline or bool(state.ready)

    def consume(self, num_messages: int = 1, timeout: float | None = -1) -> list[Message]:
        """Up to ``num_messages`` messages; returns early when ``timeout`` seconds pass."""
        if not isinstance(num_messages, int) or not 0 <= num_messages <= 1_000_000:
            raise ValueError("num_messages must be between 0 and 1000000 (1M)")
        wait = _timeout_s(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        out: list[Message] = []
        err = self._before_delivery()
        if err is not None:
            out.append(err)
        delivery = self._delivery
        # Messages already built for poll() come first.
        out.extend(delivery.built_ahead(num_messages - len(out)))
        while len(out) < num_messages:
            _, info = delivery.take(num_messages - len(out), out, None)
            if info is not None:
                delivery.advance(info)
                continue
            if out:
                # Return what is here rather than wait for a full list.
                with self._state.lock:
                    if not self._state.ready:
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
        wait = _timeout_s(timeout)
        deadline = None if wait is None else time.monotonic() + wait
        pieces: list = []
        total = 0
        err = self._before_delivery()
        if err is not None:
            raise KafkaException(err.error())
        delivery = self._delivery
        # Records already built for poll(): deliver those through the view too.
        rest = [msg for msg in delivery.built_ahead(max_records) if msg.error() is None]
        if rest:
            return view_from_messages(rest, headers)
        # The I/O thread's large socket calls run without the interpreter lock meanwhile.
        with self._client.lock_policy.bulk():
            while total < max_records:
                count, info = delivery.take(max_records - total, None, pieces)
                if info is not None:
                    total += count
                    delivery.advance(info)
                    continue
                if total:
                    break
                if not self._wait_for_data(deadline):
                    break
                err = self._before_delivery()
                if err is not None:
                    raise KafkaException(err.error())
            return delivery.view(pieces, headers)

    # -- positions and offsets -----------------------------------------------------------------
    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The next offset the application will receive, per partition (OFFSET_INVALID if
        not known yet)."""
        self._check_open()
        self._delivery.settle()
        out = []
        state = self._state
        with state.lock:
            for tp in partitions:
                ps = state.parts.get((tp.topic, tp.partition))
                pos = ps.position if ps is not None and ps.position >= 0 else OFFSET_INVALID
                out.append(TopicPartition(tp.topic, tp.partition, pos))
        return out

    def seek(self, partition: TopicPartition) -> None:
        """Move the fetch position of an assigned partition (offset or OFFSET_BEGINNING/END)."""
        self._check_open()
        state = self._state
        with state.lock:
            app = state.parts.get((partition.topic, partition.partition))
            if app is None:
                raise KafkaException(KafkaError.of(
                    E._STATE, f"{partition.topic} [{partition.partition}] is not assigned"))
            _check_offset(partition.offset)
            if self._delivery.msgs_state is app:
                self._delivery.clear_messages()
            self._seek_to(app, partition.offset, partition.leader_epoch)
        self._client.wakeup()

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching ``partitions``; undelivered fetched records are dropped and fetched
        again after ``resume``."""
        self._check_open()
        self._delivery.settle()
        state = self._state
        with state.lock:
            for tp in partitions:
                app = state.parts.get((tp.topic, tp.partition))
                if app is None or app.paused:
                    continue
                app.paused = True
                state.drop_buffered(app)
                state.command(("pause", app, app.moved(None), app.position))
        self._client.wakeup()

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Fetch paused ``partitions`` again from their positions."""
        self._check_open()
        state = self._state
        with state.lock:
            for tp in partitions:
                app = state.parts.get((tp.topic, tp.partition))
                if app is not None and app.paused:
                    app.paused = False
                    state.take_starts(app)
                    state.command(("resume", app, app.moved(None), app.position))
        self._client.wakeup()

    def fetch_until(self, partitions: list[TopicPartition]) -> None:
        """Fetch each partition only up to ``tp.offset`` (exclusive): no Fetch asks for its
        records at or past that offset, and each Fetch asks for about the bytes the records
        left take (from the sizes fetched so far), so a read of a known range (Spark's range
        reads) does not fetch far past its end. A Fetch returns whole batches, so the records
        after the bound in the batch that holds it are delivered too. A negative offset
        removes the bound. Bounds are kept by partition, also for partitions assigned later,
        until removed."""
        self._check_open()
        state = self._state
        with state.lock:
            for tp in partitions:
                if not isinstance(tp, TopicPartition):
                    raise TypeError(f"fetch_until takes TopicPartitions, not {type(tp).__name__}")
                key = (tp.topic, tp.partition)
                if tp.offset >= 0:
                    state.fetch_ends[key] = tp.offset
                else:
                    state.fetch_ends.pop(key, None)
        self._client.wakeup()

    def store_offsets(self, message: Message | None = None,
                      offsets: list[TopicPartition] | None = None) -> None:
        """Store offsets for the next commit: ``message``'s offset + 1, or ``offsets`` as given."""
        self._check_open()
        if message is not None and offsets is not None:
            raise ValueError("message and offsets are mutually exclusive")  # confluent's words
        if message is None and offsets is None:
            raise ValueError("expected either message or offsets")
        if message is not None:
            offsets = [_after(message, "store")]
        assert offsets is not None
        state = self._state
        with state.lock:
            for tp in offsets:
                ps = state.parts.get((tp.topic, tp.partition))
                if ps is None:
                    raise KafkaException(KafkaError.of(  # librdkafka's code
                        E._UNKNOWN_PARTITION, f"StoreOffsets failed: {tp.topic} "
                                              f"[{tp.partition}] is not assigned"))
                ps.stored = tp.offset
                ps.stored_metadata = tp.metadata
                ps.stored_epoch = tp.leader_epoch if tp.leader_epoch is not None else -1

    def commit(self, message: Message | None = None,
               offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commit ``message``'s offset + 1, ``offsets``, or (neither) every stored offset.

        Synchronous commits return the committed partitions or raise ``KafkaException``;
        asynchronous ones report through ``on_commit`` from a later poll.
        """
        self._check_open()
        if message is not None and offsets is not None:
            raise ValueError("message and offsets are mutually exclusive")  # confluent's words
        self._delivery.settle()
        if message is not None:
            offsets = [_after(message, "commit")]
        elif offsets is None:
            offsets = self._commits.stored_offsets(only_changed=False)
        else:
            offsets = list(offsets)
        valid = [tp for tp in offsets if tp.offset >= 0]
        if not valid:
            # As librdkafka: nothing valid to commit is _NO_OFFSET, reported to on_commit
            # by an asynchronous commit, raised by a synchronous one.
            err = KafkaError.of(E._NO_OFFSET, "Commit failed: Local: No offset stored")
            if asynchronous:
                self._commits.report(err, offsets)
                return None
            raise KafkaException(err)
        if asynchronous:
            self._commits.commit_async(valid)
            return None
        return self._commits.commit_sync(valid)

    def committed(self, partitions: list[TopicPartition],
                  timeout: float | None = None) -> list[TopicPartition]:
        """The group's committed offsets for ``partitions`` (OFFSET_INVALID where none)."""
        self._check_open()
        return self._commits.committed(partitions, _timeout_s(timeout))

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int] | None:
        """``(low, high)`` watermarks; ``cached`` uses the last fetch's values (None if
        there are none)."""
        self._check_open()
        key = (partition.topic, partition.partition)
        if cached:
            with self._state.lock:
                cur = self._state.cursors.get(key)
                if cur is None or cur.high_watermark < 0:
                    return None
                return (cur.log_start_offset, cur.high_watermark)
        wait = _timeout_s(timeout)
        # Both look-ups are in flight together: one round trip, not two.
        low_fut = self._offsets.list_offsets({key: -2}, wait or 30.0)
        high_fut = self._offsets.list_offsets({key: -1}, wait or 30.0, isolation_level=0)
        low = wait_for(low_fut, wait, "get_watermark_offsets()")[key][0]
        high = wait_for(high_fut, wait, "get_watermark_offsets()")[key][0]
        return (low, high)

    def offsets_for_times(self, partitions: list[TopicPartition],
                          timeout: float | None = None) -> list[TopicPartition]:
        """For each partition (``offset`` holding a timestamp in ms) the earliest offset whose
        timestamp is at or after it (-1 when there is none)."""
        self._check_open()
        wait = _timeout_s(timeout)
        wanted = {(tp.topic, tp.partition): tp.offset for tp in partitions}
        fut = self._offsets.list_offsets(wanted, wait or 30.0)
        found = wait_for(fut, wait, "offsets_for_times()")
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
        self._check_handle()
        self._client.set_sasl_credentials(username, password)

    def list_topics(self, topic: str | None = None, timeout: float = -1):
        """Cluster metadata in confluent-kafka's ClusterMetadata shape."""
        self._check_handle()
        return fetch_cluster_metadata(self._client, topic, _timeout_s(timeout))

    def memberid(self) -> str | None:
        """The group member id (None before the first join)."""
        self._check_open()
        g = self._group
        return g.member_id if g is not None and g.member_id else None

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """The group's identity for ``Producer.send_offsets_to_transaction``."""
        self._check_open()
        if not self._group_id:
            raise KafkaException(KafkaError.of(E._UNKNOWN_GROUP, "no group.id configured"))
        generation, member, instance = self._commits.generation()
        return ConsumerGroupMetadata(self._group_id, generation, member, instance)

    # -- closing --------------------------------------------------------------------------------
    def metrics(self) -> dict[str, int | float]:
        """A flat snapshot of the consumer's counters with Prometheus-style names (labelled
        series keyed ``name{label="value"}``); see docs/statistics.md."""
        return self._client.metrics()

    def close(self) -> None:
        """Commit (when auto commit is on), leave the group and stop the client."""
        if self._closed:
            return
        try:
            self._delivery.settle()
            self._commits.commit_before_revoke()
            group = self._group
            if group is not None:
                assigned = self._assigned()
                cb = self._callbacks.get("revoke")
                if assigned and cb is not None:
                    try:
                        cb(self, assigned)
                    except Exception:  # closing goes on
                        log.warning("on_revoke raised while closing", exc_info=True)
                self._leave(group)
            try:
                futures_wait(self._call_io(self._fetcher.shutdown, 2.0), timeout=1.0)
            except Exception:  # closing fetch sessions is best effort
                log.debug("closing fetch sessions failed", exc_info=True)
            # Deliver outstanding commit callbacks.
            events = self._state.take_events("commit")
            if self._on_commit is not None:
                for ev in events:
                    try:
                        self._on_commit(ev[1], ev[2])
                    except Exception:  # closing goes on
                        log.warning("on_commit raised while closing", exc_info=True)
        finally:
            self._closed = True
            self._fetcher.release()
            self._delivery.clear_messages()
            self._state.notify()
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
