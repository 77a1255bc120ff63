"""Share-group membership (KIP-932): ShareGroupHeartbeat on the client's I/O thread.

The member heartbeats with its subscription; the coordinator answers with the member id,
epoch and the topic-partitions assigned (by topic id). Share groups have no revocation
handshake: the assignment is taken as given. Leaving sends member epoch -1.

Errors: UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH join again with epoch 0; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE find the coordinator again; COORDINATOR_LOAD_IN_PROGRESS backs off;
authorization, INVALID_REQUEST, GROUP_ID_NOT_FOUND and an unsupported API are fatal.
"""

from __future__ import annotations

import base64
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..consumer.offsets import GROUP, TRANSIENT_LOCAL, error_of
from ..errors import KafkaError
from ..net.lanes import Lane
from ..protocol import messages as m

if TYPE_CHECKING:
    from ..net import KafkaClient

E = KafkaError
log = logging.getLogger("kafka_fast.share")
SGH = m.ShareGroupHeartbeatRequest
REDISCOVER = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
FATAL = frozenset({E.GROUP_AUTHORIZATION_FAILED, E.TOPIC_AUTHORIZATION_FAILED,
                   E.INVALID_REQUEST, E.UNSUPPORTED_VERSION, E.GROUP_ID_NOT_FOUND,
                   E.INCONSISTENT_GROUP_PROTOCOL})


class ShareGroupMember:
    """One member of a share group. Runs on the I/O thread; ``assignment()``,
    ``member_id`` and ``fatal`` may be read from any thread."""

    def __init__(self, client: KafkaClient, group_id: str, rack: str | None,
                 heartbeat_interval: float, backoff: float,
                 on_change: Callable[[], Any]) -> None:
        self.client = client
        self.group_id = group_id
        self.rack = rack
        self.heartbeat_interval = heartbeat_interval
        self.backoff = backoff
        self.on_change = on_change
        # Kafka's Uuid text form, as the Java client's (the broker takes any string of up
        # to 36 characters).
        self.member_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        self.member_epoch = 0
        self.topics: list[str] = []
        self.coordinator: int | None = None
        self.timer: Any = None
        self.inflight = False
        self.active = False
        self.round = 0
        self.fatal: KafkaError | None = None
        self.lock = threading.Lock()
        self.assigned: dict[uuid.UUID, list[int]] = {}

    # -- application-thread views ------------------------------------------------------------
    def assignment(self) -> set[tuple[str, int]]:
        """The assigned (topic, partition)s whose topic ids metadata names."""
        with self.lock:
            assigned = dict(self.assigned)
        names = {info.topic_id: name for name, info in self.client.cluster.topics.items()
                 if info.topic_id is not None}
        return {(names[tid], p) for tid, parts in assigned.items() if tid in names
                for p in parts}

    def unknown_topic_ids(self) -> bool:
        """True when the assignment names a topic id metadata does not know yet."""
        with self.lock:
            ids = set(self.assigned)
        known = {info.topic_id for info in self.client.cluster.topics.values()}
        return bool(ids - known)

    # -- I/O thread ---------------------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        """Heartbeat with ``topics`` from now on (joining with epoch 0 if not a member)."""
        self.topics = list(topics)
        self.active = True
        self.client.request_metadata(self.topics)
        self._schedule(0.0)

    def _schedule(self, delay: float) -> None:
        if self.timer is not None:
            self.timer.cancel()
        rnd = self.round
        self.timer = self.client.call_later(delay, lambda: self._heartbeat(rnd))

    def _heartbeat(self, rnd: int) -> None:
        if not self.active or rnd != self.round or self.fatal is not None:
            return
        if self.inflight:
            self._schedule(self.heartbeat_interval)
            return
        if self.coordinator is None:
            self._find_coordinator(rnd)
            return
        req = SGH(group_id=self.group_id, member_id=self.member_id,
                  member_epoch=self.member_epoch, rack_id=self.rack,
                  subscribed_topic_names=self.topics)
        self.inflight = True
        f = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        f.add_done_callback(lambda f: self._on_heartbeat(f, rnd))

    def _find_coordinator(self, rnd: int) -> None:
        f = self.client.coordinator(GROUP, self.group_id)

        def done(f: Future) -> None:
            if rnd != self.round or not self.active:
                return
            if f.exception() is not None:
                self._schedule(self.backoff)
                return
            self.coordinator = f.result()
            self._schedule(0.0)

        f.add_done_callback(done)

    def _on_heartbeat(self, f: Future, rnd: int) -> None:
        self.inflight = False
        if not self.active or rnd != self.round:
            return
        exc = f.exception()
        if exc is not None:
            err = error_of(exc)
            if err.code() == E._UNSUPPORTED_FEATURE:
                self._fail(KafkaError(E._UNSUPPORTED_FEATURE,
                                      "the group coordinator does not serve ShareGroupHeartbeat "
                                      "version 1 (share groups need Apache Kafka 4.1+)",
                                      fatal=True))
                return
            if err.code() in TRANSIENT_LOCAL:
                self.client.invalidate_coordinator(GROUP, self.group_id)
                self.coordinator = None
            self._schedule(self.backoff)
            return
        resp = f.result()
        if resp.error_code:
            self._error(resp.error_code, resp.error_message)
            return
        if resp.member_id:
            self.member_id = resp.member_id
        self.member_epoch = resp.member_epoch
        if resp.heartbeat_interval_ms > 0:
            self.heartbeat_interval = resp.heartbeat_interval_ms / 1000.0
        if resp.assignment is not None:
            assigned: dict[uuid.UUID, list[int]] = {}
            for tp in resp.assignment.topic_partitions:
                assigned.setdefault(tp.topic_id, []).extend(tp.partitions)
            with self.lock:
                self.assigned = assigned
            known = {info.topic_id for info in self.client.cluster.topics.values()}
            if set(assigned) - known:
                self.client.request_metadata(all_topics=True)
            self.on_change()
        self._schedule(self.heartbeat_interval)

    def _error(self, code: int, message: str | None) -> None:
        err = KafkaError(code, f"ShareGroupHeartbeat: {message or KafkaError(code).str()}")
        if code in REDISCOVER:
            self.client.invalidate_coordinator(GROUP, self.group_id)
            self.coordinator = None
            self._schedule(self.backoff)
        elif code == E.COORDINATOR_LOAD_IN_PROGRESS:
            self._schedule(self.backoff)
        elif code in (E.UNKNOWN_MEMBER_ID, E.FENCED_MEMBER_EPOCH):
            log.info("share group %s: %s, joining again", self.group_id, err.str())
            self._clear()
            self.member_epoch = 0
            self._schedule(0.0)
        elif code in FATAL:
            self._fail(KafkaError(code, err.str(), fatal=True))
        else:
            log.warning("share group %s: %s", self.group_id, err.str())
            self._schedule(max(self.backoff, 1.0))

    def _fail(self, err: KafkaError) -> None:
        self.fatal = err
        self._clear()
        self.on_change()

    def _clear(self) -> None:
        with self.lock:
            self.assigned = {}

    def leave(self) -> Future | None:
        """Stop heartbeating and leave the group (member epoch -1); the Future of the
        request, or None when not a member."""
        self.active = False
        self.round += 1
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self._clear()
        coordinator, epoch = self.coordinator, self.member_epoch
        self.member_epoch = 0
        if coordinator is None or epoch <= 0:
            return None
        req = SGH(group_id=self.group_id, member_id=self.member_id, member_epoch=-1)
        try:
            return self.client.send(coordinator, req, lane=Lane.COORDINATOR)
        except Exception as exc:  # the client is closing: the coordinator times us out
            log.debug("leaving share group %s not sent: %s", self.group_id, exc)
            return None
