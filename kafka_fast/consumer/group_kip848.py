"""The next-generation group protocol (KIP-848, ``group.protocol=consumer``), client side.

The coordinator assigns partitions; the member only heartbeats (ConsumerGroupHeartbeat) with
its subscription and the partitions it owns, and reconciles towards the target assignment the
coordinator returns: partitions taken away are revoked in the poll thread (after a commit when
auto commit is on), new ones are assigned there, and the next heartbeat reports the new
ownership. Member epochs replace generations (also in OffsetCommit).

Errors are handled as ``heartbeat.HeartbeatMember`` says (shared with the share-group member):
UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH lose the assignment and join again with epoch 0;
NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE find the coordinator again;
COORDINATOR_LOAD_IN_PROGRESS backs off; FENCED_INSTANCE_ID, UNSUPPORTED_VERSION,
UNSUPPORTED_ASSIGNOR, GROUP_AUTHORIZATION_FAILED and INVALID_REQUEST end membership; any other
code is posted as an error and the heartbeat retried.
"""

from __future__ import annotations

import logging
import re
import uuid
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError
from ..net.lanes import Lane
from ..protocol import messages as m
from ..protocol.versioned import versioned_message
from .heartbeat import HeartbeatMember
from .membership import GroupEvents, PollWatch
from .ownership import armed

if TYPE_CHECKING:
    from ..config.table import Config
    from ..net import KafkaClient

E = KafkaError
log = logging.getLogger("kafka_fast.consumer")
UNJOINED, JOINED, CLOSED = range(3)
CGH = m.ConsumerGroupHeartbeatRequest


class ConsumerGroupMember(HeartbeatMember):
    """One member of a consumer group under KIP-848 (same interface as ClassicGroup); every
    field is written on the I/O thread after construction."""

    API = "ConsumerGroupHeartbeat"
    FATAL = frozenset({E.FENCED_INSTANCE_ID, E.UNSUPPORTED_ASSIGNOR,
                       E.GROUP_AUTHORIZATION_FAILED, E.INVALID_REQUEST, E.UNSUPPORTED_VERSION})
    UNSUPPORTED = ("the group coordinator does not support group.protocol=consumer "
                   "(ConsumerGroupHeartbeat)")

    def __init__(self, client: KafkaClient, conf: Config, events: GroupEvents) -> None:
        super().__init__(client, conf["group.id"], str(uuid.uuid4()),
                         conf["heartbeat.interval.ms"] / 1000.0,
                         conf["retry.backoff.ms"] / 1000.0)
        self.events = events
        self.poll_watch = PollWatch(client.call_soon, self.start_join)
        self.instance_id: str | None = conf["group.instance.id"] or None
        self.rebalance_timeout_ms = conf["max.poll.interval.ms"]
        self.max_poll_interval = conf["max.poll.interval.ms"] / 1000.0
        self.server_assignor = conf["group.remote.assignor"] or None
        self.rack = conf["client.rack"] or None
        self.state = UNJOINED
        self.owned: dict[str, list[int]] = {}
        self.target: dict[uuid.UUID, list[int]] | None = None
        self.reconciling = False
        #: the reconciliation step the poll thread is applying: (names, revoked, added)
        self.pending: tuple = ({}, [], [])
        self.literal: list[str] = []
        self.patterns: list[re.Pattern] = []
        self.epoch = 0
        armed(self)

    @property
    def generation(self) -> int:
        """The member epoch (what OffsetCommit carries under this protocol)."""
        return self.member_epoch

    # -- subscription --------------------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        self.literal = [t for t in topics if not t.startswith("^")]
        self.patterns = [re.compile(t) for t in topics if t.startswith("^")]
        f = self.client.request_metadata(self.literal or None, all_topics=bool(self.patterns))
        f.add_done_callback(lambda f: self.start_join())

    def matched_topics(self) -> list[str]:
        names = set(self.literal)
        if self.patterns:
            for name in self.client.cluster.topics:
                if not name.startswith("__") and any(p.match(name) for p in self.patterns):
                    names.add(name)
        return sorted(names)

    def start_join(self) -> None:
        if self.state == CLOSED or self.fatal is not None:
            return
        self.state = JOINED
        self._heartbeat_now()

    # -- heartbeats ----------------------------------------------------------------------------
    def _token(self) -> int:
        return self.epoch

    def _current(self, token: int) -> bool:
        return self.state == JOINED and token == self.epoch

    def _heartbeat_now(self) -> None:
        self._schedule(0.0)

    def _owned_ids(self) -> list:
        view = self.client.cluster
        out = []
        for topic, parts in sorted(self.owned.items()):
            info = view.topics.get(topic)
            if info is not None and info.topic_id is not None and parts:
                out.append(CGH.TopicPartitions(topic_id=info.topic_id, partitions=sorted(parts)))
        return out

    def _heartbeat(self, epoch: int) -> None:
        if not self._current(epoch):
            return
        if (not self.inflight and self.member_epoch > 0
                and self.poll_watch.exceeded(self.max_poll_interval)):
            self.events.post_error(KafkaError.of(
                E._MAX_POLL_EXCEEDED,
                f"Application maximum poll interval ({self.max_poll_interval * 1000:.0f}ms) "
                f"exceeded: leaving the group"))
            self.leave()
            self._lost()
            self.state = UNJOINED
            self.poll_watch.rejoin_on_next_poll()
            return
        if not self._ready_to_send(epoch):
            return
        req = versioned_message(CGH(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            instance_id=self.instance_id, rack_id=self.rack,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            subscribed_topic_names=self.matched_topics(),
            # Names are resolved here (also for ^patterns); an empty regex says "none" (and
            # librdkafka's mock cluster wants both fields present together).
            subscribed_topic_regex="",
            server_assignor=self.server_assignor, topic_partitions=self._owned_ids()))
        self.inflight = True
        f = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        f.add_done_callback(lambda f: self._on_heartbeat(f, epoch))

    def _accepted(self, resp: Any) -> None:
        if resp.assignment is not None:
            target: dict[uuid.UUID, list[int]] = {}
            for tp in resp.assignment.topic_partitions:
                target.setdefault(tp.topic_id, []).extend(tp.partitions)
            self.target = target
        self._reconcile()

    def _rejoin(self, err: KafkaError) -> None:
        self._lost()
        self.member_epoch = 0
        self.epoch += 1
        self._heartbeat_now()

    def _fatal_error(self, code: int, err: KafkaError) -> KafkaError:
        if code == E.UNSUPPORTED_VERSION:
            # A broker that knows the API with the protocol switched off (Kafka 3.x, whose
            # KIP-848 support is early access and off by default) answers this way.
            return KafkaError.of(code, "the group coordinator does not support "
                                    f"group.protocol=consumer ({err.str()}); use "
                                    "group.protocol=classic")
        return KafkaError.of(code, err.str(), fatal=code == E.FENCED_INSTANCE_ID)

    def _unknown_error(self, err: KafkaError) -> None:
        self.events.post_error(err)

    def _fail(self, err: KafkaError) -> None:
        self.fatal = err
        self._lost()
        self.state = UNJOINED
        self.events.post_error(err)

    # -- reconciliation ----------------------------------------------------------------------
    def _reconcile(self) -> None:
        if self.target is None or self.reconciling:
            return
        names = {}
        unknown = False
        by_id = {info.topic_id: name for name, info in self.client.cluster.topics.items()
                 if info.topic_id is not None}
        for topic_id, parts in self.target.items():
            name = by_id.get(topic_id)
            if name is None:
                unknown = True
                continue
            names[name] = sorted(set(parts))
        if unknown:
            self.client.request_metadata(all_topics=True).add_done_callback(
                lambda f: self.client.call_soon(self._reconcile))
        old = {(t, p) for t, ps in self.owned.items() for p in ps}
        new = {(t, p) for t, ps in names.items() for p in ps}
        revoked = sorted(old - new)
        added = sorted(new - old)
        if not revoked and not added:
            if not unknown:
                self.target = None
            return
        self.reconciling = True
        self.pending = (names, revoked, added)
        self.events.post(("incremental", added, revoked, self.epoch))

    def incremental_revoke_done(self, epoch: int) -> None:
        """The poll thread applied a reconciliation step: report the new ownership."""
        if not self.reconciling:
            return
        self.reconciling = False
        names, revoked, added = self.pending
        owned = {(t, p) for t, ps in self.owned.items() for p in ps}
        owned = (owned - set(revoked)) | set(added)
        result: dict[str, list[int]] = {}
        for t, p in sorted(owned):
            result.setdefault(t, []).append(p)
        self.owned = result
        if epoch == self.epoch and self.state == JOINED:
            self._heartbeat_now()
            self._reconcile()

    def revoke_done(self, epoch: int) -> None:
        """Only the eager classic protocol revokes everything first."""

    def _lost(self) -> None:
        self.reconciling = False
        self.target = None
        if self.owned:
            owned, self.owned = self.owned, {}
            self.events.post(("lost", owned, self.epoch))

    def handle_group_error(self, code: int, api: str) -> None:
        """A commit met a membership error: heartbeat at once to learn the new epoch."""
        if self.state == JOINED:
            self._heartbeat_now()

    # -- leaving -------------------------------------------------------------------------------
    def leave(self) -> Future | None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.coordinator is None or self.member_epoch <= 0:
            return None
        req = versioned_message(CGH(
            group_id=self.group_id, member_id=self.member_id,
            member_epoch=-2 if self.instance_id else -1, instance_id=self.instance_id))
        self.member_epoch = 0
        try:
            return self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        except Exception as exc:  # the client is closing: the coordinator times us out
            log.debug("leaving group %s not sent: %s", self.group_id, exc)
            return None

    def close(self) -> Future | None:
        f = self.leave()
        self.state = CLOSED
        self.epoch += 1
        return f
