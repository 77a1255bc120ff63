"""``ShareConsumer``: confluent-kafka's KIP-932 share consumer API.

Threads: the client's I/O thread runs the group membership (``ShareGroupMember``
heartbeats); the application thread sends ShareFetch / ShareAcknowledge requests to each
partition leader through that leader's ``ShareSession`` inside ``poll``, ``commit_sync``,
``commit_async`` and ``close``, waits for their answers there, and runs the
acknowledgement commit callback there (and, in ``poll``, ``error_cb``, ``stats_cb`` and
``throttle_cb``). ``Acknowledgements`` holds what was handed out and
what is acknowledged but not yet sent.

Acknowledgement modes (``share.acknowledgement.mode``): ``implicit`` accepts every record of
a poll on the next poll, commit or close; ``explicit`` requires ``acknowledge`` for each record
before the next poll. Acknowledgements travel with the next ShareFetch to the leader the
record came from, or in a ShareAcknowledge (``commit_sync``, ``commit_async``, ``close``).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from ..config import make_config
from ..consumer.offsets import LEADER_ERRORS, error_of
from ..errors import ConfigError, KafkaError, KafkaException
from ..message import Message
from ..net import KafkaClient
from ..net.lanes import Lane
from ..topic_partition import TopicPartition
from .acks import Acknowledgements, has_renew
from .membership import ShareGroupMember
from .model import (
    AcknowledgeType,
    ConcurrentModificationException,
    IllegalStateException,
    Messages,
    ShareMessage,
)
from .records import acquired_messages
from .session import FetchLimits, ShareSession

E = KafkaError
log = logging.getLogger("kafka_fast.share")
TP = tuple[str, int]
Acks = dict[TP, dict[int, int]]
#: Outcome of acknowledgements: per partition, the offsets and the error (None: done).
Outcome = tuple[TP, set[int], KafkaError | None]
FETCH, ACKNOWLEDGE = "fetch", "acknowledge"
#: ShareAcknowledge's API key and the version that carries RENEW acknowledgements
RENEW_API = (79, 2)
_ACK_TYPES = {int(t) for t in AcknowledgeType}
#: consumer-group properties a share consumer refuses (confluent-kafka's list and wording)
_NOT_APPLICABLE = ("enable.auto.commit", "auto.offset.reset", "group.protocol",
                   "partition.assignment.strategy", "isolation.level", "group.instance.id",
                   "enable.partition.eof", "group.remote.assignor")
_BROKER_SIDE = "session.timeout.ms"


def _timeout_s(timeout: float) -> float | None:
    """Seconds to wait (None: forever, for a negative number); like confluent-kafka, anything
    but a real number (None included) is a TypeError."""
    if not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    return None if timeout < 0 else float(timeout)


def _share_conf(conf: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The configuration dict, with confluent-kafka's refusals of what a share consumer
    cannot honour."""
    if conf is None and not kwargs:
        raise TypeError("expected configuration dict")
    if conf is not None and not isinstance(conf, Mapping):
        raise TypeError(f"expected configuration dict, not {type(conf).__name__}")
    merged = {**(conf or {}), **kwargs}
    if "on_commit" in merged:
        raise ValueError("on_commit is not supported on ShareConsumer")
    if "group.id" not in merged:
        raise ConfigError("Failed to create consumer: group.id must be set")
    for name in _NOT_APPLICABLE:
        if name in merged:
            raise ConfigError(f"Failed to create share consumer: `{name}` is not applicable "
                              "for share consumer")
    if _BROKER_SIDE in merged:
        raise ConfigError(f"Failed to create share consumer: `{_BROKER_SIDE}` is not "
                          "supported for `group.protocol=consumer` or share consumer. It is "
                          "defined broker side")
    return merged


def _ack_type(ack_type: Any) -> int:
    if isinstance(ack_type, bool) or not isinstance(ack_type, int):
        raise TypeError(f"ack_type must be an AcknowledgeType, not {type(ack_type).__name__}")
    if int(ack_type) not in _ACK_TYPES:
        raise ValueError(f"invalid ack_type {int(ack_type)}: use AcknowledgeType.ACCEPT (1), "
                         f"RELEASE (2), REJECT (3) or RENEW (4)")
    return int(ack_type)


def _release(client: KafkaClient) -> None:
    """Finalizer of a share consumer dropped without close()."""
    try:
        client.close(0)
    except Exception:  # finalizers run at awkward times
        log.debug("closing a dropped share consumer's client failed", exc_info=True)


class _Request:
    """One ShareFetch or ShareAcknowledge in flight to a session's broker (``early``: the
    monotonic time before which an empty ShareFetch answer came early)."""

    __slots__ = ("kind", "future", "acks", "early")

    def __init__(self, kind: str, future: Future, acks: Acks, early: float) -> None:
        self.kind = kind
        self.future = future
        self.acks = acks
        self.early = early


class _Guard:
    """One thread at a time, and no consumer call from the commit callback."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.in_callback = False
        self.owner = 0  # the thread in a call

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        if self.in_callback:
            raise IllegalStateException(
                f"ShareConsumer.{name}() called from the acknowledgement commit callback")
        if not self.lock.acquire(blocking=False):
            # confluent-kafka's words
            raise ConcurrentModificationException(
                "Share consumer is not safe for multi-threaded access. currentThread(id: "
                f"{threading.get_ident()}) otherThread(id: {self.owner})")
        self.owner = threading.get_ident()
        try:
            yield
        finally:
            self.lock.release()


class ShareConsumer:
    """A KIP-932 share-group consumer with confluent-kafka's ``ShareConsumer`` API."""

    def __init__(self, conf: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if getattr(self, "_conf", None) is not None:
            raise RuntimeError("ShareConsumer already initialized")
        merged = _share_conf(conf, kwargs)
        config = make_config(merged, "share")
        self._group_id: str = config["group.id"]
        if not self._group_id:
            raise ConfigError("Failed to create share consumer: group.id must be set")
        self._conf = config
        self._explicit_acks = self._conf["share.acknowledgement.mode"] == "explicit"
        self._limits = FetchLimits(self._conf["fetch.wait.max.ms"], self._conf["fetch.min.bytes"],
                                   self._conf["fetch.max.bytes"],
                                   self._conf["max.poll.records"])
        self._request_timeout = self._conf["request.timeout.ms"] / 1000.0
        self._check_crcs: bool = self._conf["check.crcs"]
        self._backoff = self._conf["retry.backoff.ms"] / 1000.0
        self._guard = _Guard()
        self._closed = False
        self._subscription: list[str] = []
        self._callback: Callable[[dict, Any], Any] | None = None
        self._acks = Acknowledgements()
        self._sessions: dict[int, ShareSession] = {}
        self._requests: dict[int, _Request] = {}
        self._fetched_from: dict[TP, int] = {}
        self._buffer: list[ShareMessage] = []
        self._outcomes: list[Outcome] = []
        self._wake = threading.Event()
        try:
            self._client = KafkaClient(self._conf, name=self._conf["client.id"],
                                       client_type="consumer")
        except ConfigError as exc:
            raise ConfigError(f"Failed to create share consumer: {exc.args[0].str()}") from None
        # Client events (error_cb, stats_cb, throttle_cb) wake a waiting poll(), which serves
        # them.
        self._client.events.listener = self._wake.set
        self._client.start()
        self._member = ShareGroupMember(
            self._client, self._group_id, self._conf["client.rack"] or None,
            self._conf["heartbeat.interval.ms"] / 1000.0, self._conf["retry.backoff.ms"] / 1000.0,
            self._wake.set)
        self._finalizer = weakref.finalize(self, _release, self._client)

    # -- state checks --------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("Share consumer closed")  # confluent-kafka's text

    def _check_fatal(self) -> None:
        """Serve client events (their callbacks run here) and raise a fatal error."""
        self._client.serve_events()
        fatal = self._member.fatal or self._client.events.fatal
        if fatal is not None:
            raise KafkaException(fatal)

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- subscription --------------------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        """Subscribe to ``topics`` (replacing the subscription; [] unsubscribes)."""
        with self._guard("subscribe"):
            self._check_open()
            if not isinstance(topics, (list, tuple)) or not all(isinstance(t, str) for t in topics):
                raise TypeError("expected list of topic unicode strings")  # confluent-kafka's
            names = list(topics)
            if any(not t for t in names):
                raise ValueError("subscribe: topic names must not be empty")
            if len(set(names)) != len(names):
                raise ValueError(f"subscribe: duplicate topic names in {names}")
            if any(t.startswith("^") for t in names):
                raise ValueError("subscribe: share groups take topic names, not ^regex patterns")
            if not names:
                self._leave(self._deadline(self._request_timeout))
                return
            self._subscription = names
            # the member, not self: a consumer dropped right after subscribe() is not kept
            # alive until the I/O thread runs this
            member = self._member
            self._client.call_soon(lambda: member.subscribe(names))

    def subscription(self) -> list[str]:
        """The subscribed topic names."""
        with self._guard("subscription"):
            self._check_open()
            return list(self._subscription)

    def unsubscribe(self) -> None:
        """Commit pending acknowledgements, close the share sessions and leave the group."""
        with self._guard("unsubscribe"):
            self._check_open()
            self._leave(self._deadline(self._request_timeout))

    def _leave(self, deadline: float | None) -> None:
        if not self._explicit_acks:
            self._acks.accept_all()
        self._close_sessions(deadline)
        self._dispatch()
        self._subscription = []
        done: Future = Future()

        def leave() -> None:
            f = self._member.leave()
            if f is None:
                done.set_result(None)
            else:
                f.add_done_callback(lambda f: done.set_result(None))

        self._client.call_soon(leave)
        try:
            done.result(self._remaining(deadline))
        except Exception as exc:  # best effort: the coordinator times the member out
            log.debug("leaving share group %s: %r", self._group_id, exc)
        self._acks.forget(set(self._acks.in_flight))
        self._buffer.clear()
        self._fetched_from.clear()

    # -- polling -------------------------------------------------------------------------------
    def poll(self, timeout: float = -1) -> Messages:
        """The records acquired for this consumer, as ``Messages`` (empty when ``timeout``
        seconds pass first; -1 waits)."""
        with self._guard("poll"):
            self._check_open()
            if not self._subscription:
                raise IllegalStateException("poll: the share consumer is not subscribed to "
                                            "any topic")
            if self._explicit_acks and self._acks.unacknowledged():
                raise IllegalStateException(
                    f"poll: {self._acks.unacknowledged()} records of the previous poll are not "
                    "acknowledged (share.acknowledgement.mode=explicit)")
            if not self._explicit_acks:
                self._acks.accept_all()
            deadline = self._deadline(_timeout_s(timeout))
            while True:
                self._check_fatal()
                self._collect()
                self._dispatch()
                if self._buffer:
                    break
                self._send_fetches(deadline)
                remaining = self._remaining(deadline)
                if remaining is not None and remaining <= 0:
                    break
                self._wake.wait(self._idle_wait(remaining))
                self._wake.clear()
            out, self._buffer = self._buffer, []
            by_tp: dict[TP, list[int]] = {}
            for msg in out:
                by_tp.setdefault((msg.topic() or "", msg.partition() or 0), []).append(
                    msg.offset() or 0)
            for tp, offsets in by_tp.items():
                self._acks.hand_out(tp, offsets)
            return Messages(out)

    def _idle_wait(self, remaining: float | None) -> float:
        """How long poll may sleep: until ``remaining`` runs out, a session backing off may
        send again, or (waiting forever) a second, unless woken first."""
        wait = 1.0 if remaining is None else remaining
        now = time.monotonic()
        for node, session in self._sessions.items():
            if node not in self._requests and session.not_before > now:
                wait = min(wait, session.not_before - now)
        return wait

    @staticmethod
    def _deadline(timeout: float | None) -> float | None:
        return None if timeout is None else time.monotonic() + timeout

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def _session(self, node: int) -> ShareSession:
        session = self._sessions.get(node)
        if session is None:
            session = self._sessions[node] = ShareSession(node, self._group_id)
        return session

    def _topic_ids(self) -> dict:
        return {name: info.topic_id for name, info in self._client.cluster.topics.items()
                if info.topic_id is not None}

    def _send(self, node: int, kind: str, request: Any, acks: Acks, wait_ms: int = 0) -> None:
        timeout_ms = int(self._request_timeout * 1000) + wait_ms
        try:
            f = self._client.send(node, request, timeout_ms=timeout_ms,
                                  lane=Lane.FETCH if kind == FETCH else Lane.DEFAULT)
        except KafkaException as exc:
            self._failed(acks, exc.args[0])
            return
        self._session(node).busy = True
        self._requests[node] = _Request(kind, f, acks, time.monotonic() + wait_ms / 1000.0)
        f.add_done_callback(lambda f: self._wake.set())

    def _send_fetches(self, deadline: float | None) -> None:
        """A ShareFetch to every idle leader of an assigned partition or of pending
        acknowledgements."""
        wanted: dict[int, set[TP]] = {}
        missing = False
        for t, p in self._member.assignment():
            node = self._client.leader(t, p)
            if node is None:
                missing = True
                continue
            wanted.setdefault(node, set()).add((t, p))
        if missing or self._member.unknown_topic_ids():
            self._client.request_metadata()
        ack_nodes: dict[int, set[TP]] = {}
        for tp in self._acks.pending_partitions():
            ack_nodes.setdefault(self._fetched_from.get(tp, -1), set()).add(tp)
        self._drop_unroutable(ack_nodes.pop(-1, set()))
        ids = self._topic_ids()
        remaining = self._remaining(deadline)
        wait_ms = self._limits.max_wait_ms if remaining is None else min(
            self._limits.max_wait_ms, int(remaining * 1000))
        now = time.monotonic()
        for node in sorted(set(wanted) | set(ack_nodes)):
            if node in self._requests or self._session(node).not_before > now:
                continue
            acks = self._acks.take(ack_nodes.get(node, set()))
            session = self._session(node)
            if has_renew(acks):
                # A ShareFetch renewing locks fetches nothing (KIP-1222): acknowledge first.
                self._send_acknowledge(node, session, acks)
                continue
            req = session.fetch_request(self._member.member_id, wanted.get(node, set()), acks,
                                        ids, self._limits, wait_ms)
            self._send(node, FETCH, req, acks, wait_ms)

    def _drop_unroutable(self, tps: set[TP]) -> None:
        if tps:
            acks = self._acks.take(tps)
            self._failed(acks, KafkaError.of(E._STATE, "the records' share session is gone"))

    # -- answers -------------------------------------------------------------------------------
    def _collect(self, nodes: set[int] | None = None) -> None:
        """Handle every answered request (of ``nodes``, default all)."""
        for node, req in list(self._requests.items()):
            if (nodes is not None and node not in nodes) or not req.future.done():
                continue
            del self._requests[node]
            session = self._session(node)
            session.busy = False
            exc = req.future.exception()
            if exc is not None:
                err = error_of(exc)
                log.debug("Share%s to broker %d failed: %s", req.kind, node, err.str())
                session.reset()
                session.not_before = time.monotonic() + self._backoff
                self._lost_session(node)
                self._failed(req.acks, err)
                if err.code() == E._UNSUPPORTED_FEATURE:
                    raise KafkaException(KafkaError.of(
                        E._UNSUPPORTED_FEATURE,
                        f"broker {node} does not serve Share{req.kind.capitalize()} version 1 or "
                        "later (share groups need Apache Kafka 4.1+)",
                        fatal=True))
                continue
            resp = req.future.result()
            session.answered(resp.error_code)
            if resp.error_code:
                log.debug("Share%s to broker %d: error %s %s", req.kind, node,
                          resp.error_code, resp.error_message)
                session.not_before = time.monotonic() + self._backoff
                err = KafkaError.of(resp.error_code,
                                 f"Share{req.kind.capitalize()}: "
                                 f"{resp.error_message or KafkaError.of(resp.error_code).str()}")
                if resp.error_code in (E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH):
                    self._lost_session(node)
                self._failed(req.acks, err)
                continue
            if not self._answered(node, req, resp) and time.monotonic() < req.early:
                # Nothing acquired before the wait ran out (e.g. the first batch exceeds
                # max.partition.fetch.bytes): do not ask again at once.
                session.not_before = time.monotonic() + self._backoff

    def _answered(self, node: int, req: _Request, resp: Any) -> bool:
        """Handle an answer without a top-level error; True if it acquired records."""
        names = {tid: name for name, tid in self._topic_ids().items()}
        seen: set[TP] = set()
        acquired = False
        for topic in resp.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for part in topic.partitions:
                tp = (name, part.partition_index)
                if tp in req.acks:
                    seen.add(tp)
                    code = (part.acknowledge_error_code if req.kind == FETCH
                            else part.error_code)
                    message = (part.acknowledge_error_message if req.kind == FETCH
                               else part.error_message)
                    err = KafkaError.of(code, message or KafkaError.of(code).str()) if code else None
                    self._outcomes.append((tp, set(req.acks[tp]), err))
                if req.kind == FETCH and self._fetched(node, tp, part):
                    acquired = True
        for tp in set(req.acks) - seen:
            self._outcomes.append((tp, set(req.acks[tp]), None))
        return acquired

    def _fetched(self, node: int, tp: TP, part: Any) -> bool:
        """Take a ShareFetch partition's acquired records; True if there were any."""
        if part.error_code:
            if part.error_code in LEADER_ERRORS:
                self._client.request_metadata([tp[0]])
            else:
                log.warning("ShareFetch %s [%d]: %s", tp[0], tp[1],
                            part.error_message or KafkaError.of(part.error_code).str())
            return False
        acquired = [(a.first_offset, a.last_offset, a.delivery_count)
                    for a in part.acquired_records]
        if not acquired:
            return False
        self._fetched_from[tp] = node
        msgs, gaps, unseen = acquired_messages(tp[0], tp[1], part.records, acquired,
                                               self._check_crcs)
        self._buffer.extend(msgs)
        self._acks.gaps(tp, gaps)
        self._acks.gaps(tp, unseen, AcknowledgeType.RELEASE)
        return True

    def _lost_session(self, node: int) -> None:
        """The broker dropped ``node``'s session, and with it this consumer's locks there."""
        lost = {tp for tp, n in self._fetched_from.items() if n == node}
        self._buffer = [m for m in self._buffer
                        if (m.topic(), m.partition()) not in lost]
        self._acks.forget(lost)
        for tp in lost:
            del self._fetched_from[tp]

    def _failed(self, acks: Acks, err: KafkaError) -> None:
        for tp, offsets in acks.items():
            self._outcomes.append((tp, set(offsets), err))

    def _dispatch(self, outcomes: list[Outcome] | None = None) -> None:
        """Run the acknowledgement commit callback for the collected outcomes."""
        if outcomes is None:
            outcomes, self._outcomes = self._outcomes, []
        callback = self._callback
        if callback is None:
            return
        by_error: dict[Any, dict[TopicPartition, set[int]]] = {}
        for (t, p), offsets, err in outcomes:
            key = None if err is None else (err.code(), err.str())
            group = by_error.setdefault(key, {})
            group.setdefault(TopicPartition(t, p), set()).update(offsets)
        errors = {(err.code(), err.str()): err for _, _, err in outcomes if err is not None}
        for key, by_tp in by_error.items():
            exc = None if key is None else KafkaException(errors[key])
            self._guard.in_callback = True
            try:
                callback(by_tp, exc)
            finally:
                self._guard.in_callback = False

    # -- acknowledging -------------------------------------------------------------------------
    def acknowledge(self, message: Message, ack_type: int = AcknowledgeType.ACCEPT) -> None:
        """Mark a record returned by poll as accepted, released or rejected (explicit mode);
        sent with the next poll or commit."""
        self._check_open()  # before the arguments, as confluent-kafka's
        if not isinstance(message, Message):
            raise TypeError(f"message must be a Message, not {type(message).__name__}")
        kind = _ack_type(ack_type)
        with self._guard("acknowledge"):
            self._check_open()
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            if topic is None:
                raise ValueError("acknowledge: the message has no topic")
            self._acknowledge(topic, partition, offset, kind)

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           ack_type: int = AcknowledgeType.ACCEPT) -> None:
        """``acknowledge`` by topic, partition and offset."""
        self._check_open()
        if not isinstance(topic, str):
            raise TypeError(f"topic must be a str, not {type(topic).__name__}")
        for name, value in (("partition", partition), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
        kind = _ack_type(ack_type)
        with self._guard("acknowledge_offset"):
            self._check_open()
            self._acknowledge(topic, partition, offset, kind)

    def _acknowledge(self, topic: str, partition: int | None, offset: int | None,
                     kind: int) -> None:
        if partition is None or partition < 0 or offset is None or offset < 0:
            raise ValueError(f"acknowledge: invalid partition {partition} or offset {offset}")
        if not self._explicit_acks:
            raise IllegalStateException(
                "acknowledge needs share.acknowledgement.mode=explicit (implicit mode accepts "
                "every record on the next poll)")
        self._acks.acknowledge((topic, partition), offset, kind)

    def set_acknowledgement_commit_callback(
            self, callback: Callable[[dict, Any], Any] | None) -> None:
        """Call ``callback(offsets, exception)`` (``{TopicPartition: set of offsets}``,
        KafkaException or None) when the broker answers acknowledgements."""
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable or None")
        with self._guard("set_acknowledgement_commit_callback"):
            self._check_open()
            self._callback = callback

    def commit_sync(self, timeout: float = 60) -> dict[TopicPartition, Any]:
        """Send the pending acknowledgements and wait for the answers (up to ``timeout``
        seconds, -1: wait); ``{TopicPartition: None or KafkaException}``."""
        self._check_open()
        wait = _timeout_s(timeout)
        with self._guard("commit_sync"):
            self._check_open()
            self._client.serve_events()  # error_cb and friends, as confluent-kafka's drain
            if not self._explicit_acks:
                self._acks.accept_all()
            deadline = self._deadline(wait)
            outcomes = self._acknowledge_all(deadline)
            self._dispatch()
            return {TopicPartition(t, p): None if err is None else KafkaException(err)
                    for (t, p), _, err in outcomes}

    def commit_async(self) -> None:
        """Send the pending acknowledgements; the callback gets the answers (in a later
        poll, commit or close)."""
        with self._guard("commit_async"):
            self._check_open()
            self._client.serve_events()
            if not self._explicit_acks:
                self._acks.accept_all()
            self._collect()
            self._send_acknowledges(idle_only=True)
            self._dispatch()

    def _send_acknowledges(self, idle_only: bool, close: bool = False) -> set[int]:
        """A ShareAcknowledge to every session node with pending acknowledgements (and, with
        ``close``, to every open session, ending it); the nodes sent to."""
        by_node: dict[int, set[TP]] = {}
        for tp in self._acks.pending_partitions():
            by_node.setdefault(self._fetched_from.get(tp, -1), set()).add(tp)
        self._drop_unroutable(by_node.pop(-1, set()))
        if close:
            for node, session in self._sessions.items():
                if session.epoch > 0:
                    by_node.setdefault(node, set())
        sent: set[int] = set()
        for node, tps in sorted(by_node.items()):
            if node in self._requests:
                if idle_only:
                    continue
                raise AssertionError("acknowledging to a busy session")
            session = self._session(node)
            if not self._send_acknowledge(node, session, self._acks.take(tps), close):
                continue
            if close:
                session.reset()
            sent.add(node)
        return sent

    def _send_acknowledge(self, node: int, session: ShareSession, acks: Acks,
                          close: bool = False) -> bool:
        """A ShareAcknowledge of ``acks`` in ``node``'s session; False when it cannot be
        sent (the acknowledgements fail)."""
        if session.epoch == 0:
            # No session: the broker dropped these records' locks with it.
            self._failed(acks, KafkaError.of(E.SHARE_SESSION_NOT_FOUND,
                                          "the records' share session is gone"))
            return False
        if has_renew(acks) and (self._client.api_version(node, RENEW_API[0]) or 2) < 2:
            self._failed(acks, KafkaError.of(
                E._UNSUPPORTED_FEATURE, f"broker {node} does not serve ShareAcknowledge "
                f"version {RENEW_API[1]}, needed to RENEW acquisition locks (Kafka 4.2+)"))
            return False
        self._send(node, ACKNOWLEDGE, session.acknowledge_request(
            self._member.member_id, acks, self._topic_ids(), close=close), acks)
        return True

    def _wait(self, nodes: set[int], deadline: float | None) -> None:
        """Wait until the requests to ``nodes`` are answered (or ``deadline``)."""
        while True:
            self._collect(nodes)
            if not any(n in self._requests for n in nodes):
                return
            remaining = self._remaining(deadline)
            if remaining is not None and remaining <= 0:
                return
            self._wake.wait(remaining if remaining is not None else 1.0)
            self._wake.clear()

    def _acknowledge_all(self, deadline: float | None, close: bool = False) -> list[Outcome]:
        """Send every pending acknowledgement (after the requests in flight) and wait for the
        answers; the outcomes (also kept for the callback)."""
        self._wait(set(self._requests), deadline)
        start = len(self._outcomes)
        busy = set(self._requests)
        if busy:  # the deadline passed with requests in flight: they are not waited for
            for node in busy:
                req = self._requests.pop(node)
                self._failed(req.acks, KafkaError.of(
                    E._TIMED_OUT, f"no answer to Share{req.kind.capitalize()} in time"))
                self._session(node).reset()
                self._lost_session(node)
        sent = self._send_acknowledges(idle_only=False, close=close)
        self._wait(sent, deadline)
        for node in sent:
            late = self._requests.pop(node, None)
            if late is not None:
                self._failed(late.acks, KafkaError.of(E._TIMED_OUT,
                                                   "no answer to ShareAcknowledge in time"))
        return self._outcomes[start:]

    def _close_sessions(self, deadline: float | None) -> None:
        self._acknowledge_all(deadline, close=True)
        for session in self._sessions.values():
            session.reset()

    # -- closing -------------------------------------------------------------------------------
    def set_sasl_credentials(self, username: str, password: str) -> None:
        """Credentials for the next SASL logins (PLAIN, SCRAM)."""
        with self._guard("set_sasl_credentials"):
            self._check_open()
            self._client.set_sasl_credentials(username, password)

    def close(self) -> None:
        """Commit pending acknowledgements, close the share sessions, leave the group and
        stop the client. A second close does nothing."""
        with self._guard("close"):
            if self._closed:
                return
            try:
                self._client.serve_events()  # what is queued for error_cb, stats_cb, ...
            finally:
                try:
                    deadline = self._deadline(self._request_timeout)
                    if self._subscription:
                        self._leave(deadline)
                finally:
                    self._closed = True
                    self._finalizer.detach()
                    self._client.close()
