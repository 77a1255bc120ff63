"""Share-group membership (KIP-932): ShareGroupHeartbeat on the client's I/O thread.

The member heartbeats with its subscription; the coordinator answers with the member id,
epoch and the topic-partitions assigned (by topic id). Share groups have no revocation
handshake: the assignment is taken as given. Leaving sends member epoch -1.

Errors are handled as ``consumer.heartbeat.HeartbeatMember`` says (shared with the KIP-848
member): UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH join again with epoch 0; NOT_COORDINATOR /
COORDINATOR_NOT_AVAILABLE find the coordinator again; COORDINATOR_LOAD_IN_PROGRESS backs off;
authorization, INVALID_REQUEST, GROUP_ID_NOT_FOUND and an unsupported API are fatal; any other
code is logged and the heartbeat retried.
"""

from __future__ import annotations

import base64
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..consumer.heartbeat import HeartbeatMember
from ..consumer.ownership import armed
from ..errors import KafkaError
from ..net.lanes import Lane
from ..protocol import messages as m

if TYPE_CHECKING:
    from ..net import KafkaClient

E = KafkaError
log = logging.getLogger("kafka_fast.share")
SGH = m.ShareGroupHeartbeatRequest
FATAL = frozenset({E.GROUP_AUTHORIZATION_FAILED, E.TOPIC_AUTHORIZATION_FAILED,
                   E.INVALID_REQUEST, E.UNSUPPORTED_VERSION, E.GROUP_ID_NOT_FOUND,
                   E.INCONSISTENT_GROUP_PROTOCOL})


class ShareGroupMember(HeartbeatMember):
    """One member of a share group. Runs on the I/O thread, which writes every field after
    construction; ``assignment()``, ``member_id`` and ``fatal`` may be read from any thread."""

    API = "ShareGroupHeartbeat"
    FATAL = FATAL
    UNSUPPORTED = ("the group coordinator does not serve ShareGroupHeartbeat version 1 "
                   "(share groups need Apache Kafka 4.1+)")

    def __init__(self, client: KafkaClient, group_id: str, rack: str | None,
                 heartbeat_interval: float, backoff: float,
                 on_change: Callable[[], Any]) -> None:
        # Kafka's Uuid text form, as the Java client's (the broker takes any string of up
        # to 36 characters).
        super().__init__(client, group_id,
                         base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode(),
                         heartbeat_interval, backoff)
        self.rack = rack
        self.on_change = on_change
        self.topics: list[str] = []
        self.active = False
        self.round = 0
        self.lock = threading.Lock()
        self.assigned: dict[uuid.UUID, list[int]] = {}
        armed(self)

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

    def _token(self) -> int:
        return self.round

    def _current(self, token: int) -> bool:
        return self.active and token == self.round

    def _heartbeat(self, rnd: int) -> None:
        if not self._current(rnd) or self.fatal is not None or not self._ready_to_send(rnd):
            return
        req = SGH(group_id=self.group_id, member_id=self.member_id,
                  member_epoch=self.member_epoch, rack_id=self.rack,
                  subscribed_topic_names=self.topics)
        self.inflight = True
        f = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        f.add_done_callback(lambda f: self._on_heartbeat(f, rnd))

    def _accepted(self, resp: Any) -> None:
        if resp.assignment is None:
            return
        assigned: dict[uuid.UUID, list[int]] = {}
        for tp in resp.assignment.topic_partitions:
            assigned.setdefault(tp.topic_id, []).extend(tp.partitions)
        with self.lock:
            self.assigned = assigned
        known = {info.topic_id for info in self.client.cluster.topics.values()}
        if set(assigned) - known:
            self.client.request_metadata(all_topics=True)
        self.on_change()

    def _rejoin(self, err: KafkaError) -> None:
        log.info("share group %s: %s, joining again", self.group_id, err.str())
        self._clear()
        self.member_epoch = 0
        self._schedule(0.0)

    def _unknown_error(self, err: KafkaError) -> None:
        log.warning("share group %s: %s", self.group_id, err.str())

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
