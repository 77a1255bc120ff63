"""Metadata refresh: coalesced requests, retries with backoff, periodic refresh.

Runs on the I/O thread of its ``ClusterLink`` (``kafka_fast.cluster.link``). One Metadata request is in flight at a time; requests that
arrive meanwhile join it when it already covers their topics, or are merged into the next
one. Topics asked for are remembered and refreshed periodically (``refresh_interval``:
``topic.metadata.refresh.interval.ms`` or ``metadata.max.age.ms``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ..errors import KafkaError, KafkaException
from ..protocol.messages import MetadataRequest
from ..shared.backoff import Backoff
from ..shared.futures import settle_all
from .link import ClusterLink, Timer
from .view import ClusterView

if TYPE_CHECKING:
    from ..config import Config

#: Topic errors after which the topic is asked for again soon (leader elections and the like).
RETRY_TOPIC_ERRORS = frozenset({
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
})
_MAX_FOLLOW_UPS = 10


class _Batch:
    __slots__ = ("topics", "all", "futures", "deadline")

    def __init__(self, topics: set[str], all_topics: bool, deadline: float) -> None:
        self.topics = topics
        self.all = all_topics
        self.futures: list[Future] = []
        self.deadline = deadline

    def covers(self, topics: set[str], all_topics: bool) -> bool:
        return self.all or (not all_topics and topics <= self.topics)


class MetadataManager:
    """Metadata refreshes for ``link``; ``conf`` is the client's ``Config``."""

    def __init__(self, link: ClusterLink, conf: Config) -> None:
        self.link = link
        self.tracked: set[str] = set()
        self.max_age = conf["metadata.max.age.ms"] / 1000.0
        #: Seconds between periodic refreshes of the tracked topics (None: none).
        self.refresh_interval = refresh_interval(conf)
        self.timeout = conf["request.timeout.ms"] / 1000.0
        self.backoff = Backoff(conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])
        self._follow_backoff = Backoff(conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])
        self._follow_ups = 0
        self.auto_create = _auto_create(conf)
        self.rebootstrap_after = (conf["metadata.recovery.rebootstrap.trigger.ms"] / 1000.0
                                  if conf["metadata.recovery.strategy"] == "rebootstrap"
                                  else None)
        #: Monotonic time of the last Metadata answer (None before the first).
        self.last_answer: float | None = None
        self._inflight: _Batch | None = None
        self._next: _Batch | None = None
        self._periodic: Timer | None = None
        self._retry_timer: Timer | None = None
        #: Called on the I/O thread after every answered refresh with the new view and the
        #: topics the answer covers (None: every topic of the cluster).
        self.listeners: list[Callable[[ClusterView, frozenset[str] | None], object]] = []

    # -- entry points -----------------------------------------------------------------------
    def request(self, topics: list[str] | None, all_topics: bool) -> Future:
        """Thread-safe: a Future resolved with the ClusterView after the refresh."""
        fut: Future = Future()
        wanted = None if topics is None else {str(t) for t in topics}
        self.link.loop.call_soon(lambda: self.submit(wanted, all_topics, fut))
        self.link.ensure_started()
        return fut

    def submit(self, topics: set[str] | None, all_topics: bool,
               fut: Future | None = None) -> None:
        """I/O thread: ask for ``topics`` (None: those tracked), resolving ``fut`` after."""
        if topics is None:
            topics = set(self.tracked)
        else:
            self.tracked |= topics
        inflight = self._inflight
        if inflight is not None and inflight.covers(topics, all_topics):
            if fut is not None:
                inflight.futures.append(fut)
            return
        nxt = self._next
        if nxt is None:
            nxt = self._next = _Batch(set(), False, 0.0)
        nxt.topics |= topics
        nxt.all = nxt.all or all_topics
        if fut is not None:
            nxt.futures.append(fut)
        self._send_next()

    def start_periodic(self) -> None:
        self._arm_periodic()

    def fail_all(self, exc: BaseException) -> None:
        """Fail every waiting request (client shutdown)."""
        for batch in (self._inflight, self._next):
            if batch is not None:
                settle_all(batch.futures, error=exc)
        self._inflight = self._next = None

    # -- sending and responses --------------------------------------------------------------
    def _send_next(self) -> None:
        if self._inflight is not None or self._next is None or self._retry_timer is not None:
            return
        batch, self._next = self._next, None
        batch.deadline = time.monotonic() + self.timeout
        self._inflight = batch
        self._send(batch)

    def _send(self, batch: _Batch) -> None:
        if batch.all:
            topics = None
        else:
            topics = [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(batch.topics)]
        req = MetadataRequest(topics=topics, allow_auto_topic_creation=self.auto_create)
        remaining_ms = max(1, int((batch.deadline - time.monotonic()) * 1000))
        try:
            fut = self.link.send_any(req, timeout_ms=remaining_ms)
        except KafkaException as exc:  # the client closed: fail the waiters, not the loop
            self._inflight = None
            settle_all(batch.futures, error=exc)
            return
        fut.add_done_callback(lambda f: self.link.loop.call_soon(
            lambda: self._on_done(batch, f)))

    def _on_done(self, batch: _Batch, fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            err = exc.args[0] if isinstance(exc, KafkaException) else None
            retriable = err is None or err.retriable() or err.code() in (
                KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN)
            if err is not None and err.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL):
                retriable = False
            self._maybe_rebootstrap()
            delay = self.backoff.next_delay()
            if retriable and time.monotonic() + delay < batch.deadline:
                self._retry_timer = self.link.loop.call_later(
                    delay, lambda: self._retry(batch))
                return
            self._inflight = None
            settle_all(batch.futures, error=exc)
            self._send_next()
            return
        resp = fut.result()
        node = getattr(fut, "node_id", -1)
        if getattr(resp, "error_code", 0) == KafkaError.REBOOTSTRAP_REQUIRED:
            # KIP-1102: the broker says our metadata is stale; ask the bootstrap list.
            self.link.rebootstrap(f"broker {node} answered Metadata with REBOOTSTRAP_REQUIRED")
            delay = self.backoff.next_delay()
            if time.monotonic() + delay < batch.deadline:
                self._retry_timer = self.link.loop.call_later(delay, lambda: self._retry(batch))
                return
            self._inflight = None
            settle_all(batch.futures, error=KafkaException(KafkaError.of(
                KafkaError.REBOOTSTRAP_REQUIRED, f"broker {node} answered Metadata with "
                "REBOOTSTRAP_REQUIRED until the request timed out")))
            self._send_next()
            return
        self.backoff.reset()
        self.last_answer = time.monotonic()
        view = self.link.cluster.merge(resp, None if batch.all else batch.topics, node)
        self.link.set_cluster(view)
        self._inflight = None
        covered = None if batch.all else frozenset(batch.topics)
        for listener in list(self.listeners):
            listener(view, covered)
        settle_all(batch.futures, view)
        self._follow_up(view, batch)
        self._arm_periodic()
        self._send_next()

    def _maybe_rebootstrap(self) -> None:
        """KIP-1102: no Metadata answer for ``metadata.recovery.rebootstrap.trigger.ms``
        since the last one -> back to the bootstrap list."""
        after, last = self.rebootstrap_after, self.last_answer
        if after is None or last is None or time.monotonic() - last < after:
            return
        self.last_answer = time.monotonic()  # the next trigger is another interval away
        self.link.rebootstrap(f"no metadata for {after * 1000:.0f} ms")

    def _retry(self, batch: _Batch) -> None:
        self._retry_timer = None
        self._send(batch)

    def _follow_up(self, view: ClusterView, batch: _Batch) -> None:
        """Ask again soon for topics with leader elections in progress."""
        names = view.topics if batch.all else batch.topics
        again = set()
        for name in names:
            info = view.topics.get(name)
            if info is None:
                continue
            if info.error is not None:
                if info.error.code() in RETRY_TOPIC_ERRORS:
                    again.add(name)
            elif any(p.leader < 0 for p in info.partitions.values()):
                again.add(name)
        if not again or self._follow_ups >= _MAX_FOLLOW_UPS:
            if not again:
                self._follow_ups = 0
                self._follow_backoff.reset()
            return
        self._follow_ups += 1
        self.link.loop.call_later(self._follow_backoff.next_delay(),
                                    lambda: self.submit(again, False, None))

    def _arm_periodic(self) -> None:
        if self._periodic is not None:
            self._periodic.cancel()
        interval = self.refresh_interval
        if interval is None:
            self._periodic = None
            return
        if not self.tracked:  # only the broker list: no more often than every 10 s
            interval = max(interval, BROKERS_ONLY_MIN_INTERVAL)
        self._periodic = self.link.loop.call_later(
            interval, lambda: self.submit(None, False, None))


#: librdkafka refreshes only the broker list, while no topic is in use, at most this often.
BROKERS_ONLY_MIN_INTERVAL = 10.0


def refresh_interval(conf: Config) -> float | None:
    """Seconds between periodic metadata refreshes, None for none.

    ``topic.metadata.refresh.interval.ms`` (librdkafka's; -1 switches the periodic refresh
    off) and ``metadata.max.age.ms`` (the Java client's: refresh at least this often) both
    set it: the shorter of those given explicitly, ``metadata.max.age.ms``'s default when
    neither is given."""
    given = []
    if conf.is_set("topic.metadata.refresh.interval.ms"):
        interval = conf["topic.metadata.refresh.interval.ms"]
        if interval > 0:
            given.append(interval)
        elif not conf.is_set("metadata.max.age.ms"):
            return None
    if conf.is_set("metadata.max.age.ms") or not given:
        given.append(conf["metadata.max.age.ms"])
    return min(given) / 1000.0


def _auto_create(conf: Config) -> bool:
    """Producers let the broker auto-create topics (as the Java client does); others do not,
    unless ``allow.auto.create.topics`` says otherwise."""
    try:
        value = conf["allow.auto.create.topics"]
    except KeyError:
        value = None
    if value is not None and conf.is_set("allow.auto.create.topics"):
        return bool(value)
    return getattr(conf, "role", "") == "producer"
