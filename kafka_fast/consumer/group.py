"""The classic group protocol (JoinGroup / SyncGroup / Heartbeat / LeaveGroup), client side.

The state machine runs on the I/O thread; heartbeats use I/O-thread timers. Everything the
application must see (assignments, revocations, lost partitions, errors) is posted to the
consumer's event queue and handled in the thread that calls ``poll``. Under the eager
protocol the member revokes everything (in the poll thread) before it rejoins; under the
cooperative protocol it keeps what it owns, revokes only what the new assignment takes away
and rejoins once more when it gave something up (KIP-429).

Errors follow the client design's table: ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID /
REBALANCE_IN_PROGRESS rejoin; NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE (and a heartbeat
left without an answer) find the coordinator again and keep the generation;
COORDINATOR_LOAD_IN_PROGRESS backs off; FENCED_INSTANCE_ID is fatal.
"""

from __future__ import annotations

import logging
import re
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ..errors import KafkaError, ProtocolError
from ..net.lanes import Lane
from ..protocol import messages as m
from ..protocol.versioned import versioned_message
from .assignors import COOPERATIVE, Assignor, Subscription
from .consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from .membership import GroupEvents, PollWatch
from .offsets import GROUP, TRANSIENT_LOCAL, error_of
from .ownership import armed, owned

if TYPE_CHECKING:
    from ..config.table import Config
    from ..net import KafkaClient

E = KafkaError
log = logging.getLogger("kafka_fast.consumer")
REJOIN = frozenset({E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.REBALANCE_IN_PROGRESS})
REDISCOVER = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})

#: librdkafka's mock cluster closes the connection on flexible JoinGroup (v6+) and
#: SyncGroup (v4+) requests; v5 and v3 carry everything this client uses (static
#: membership included).
JOIN_GROUP_MAX_VERSION = 5
SYNC_GROUP_MAX_VERSION = 3
#: Seconds the group leader waits before sending the assignment (see ``_on_join``).
LEADER_SYNC_DELAY = 0.05

# states
UNJOINED, REVOKING, JOINING, SYNCING, STABLE, CLOSED = range(6)


@owned
class ClassicGroup:
    """One member of a consumer group under the classic protocol; every field is written on
    the I/O thread after construction."""

    def __init__(self, client: KafkaClient, conf: Config, events: GroupEvents,
                 assignors: list[Assignor]) -> None:
        self.client = client
        self.events = events
        self.poll_watch = PollWatch(client.call_soon, self.start_join)
        self.group_id: str = conf["group.id"]
        self.instance_id: str | None = conf["group.instance.id"] or None
        self.session_timeout_ms = conf["session.timeout.ms"]
        self.rebalance_timeout_ms = conf["max.poll.interval.ms"]
        self.heartbeat_interval = conf["heartbeat.interval.ms"] / 1000.0
        self.max_poll_interval = conf["max.poll.interval.ms"] / 1000.0
        self.protocol_type = conf["group.protocol.type"]
        self.assignors = assignors
        self.cooperative = assignors[0].rebalance_protocol == COOPERATIVE
        self.backoff = conf["retry.backoff.ms"] / 1000.0
        self.member_id = ""
        self.generation = -1
        self.protocol_name: str | None = None
        self.state = UNJOINED
        self.owned: dict[str, list[int]] = {}
        self.topics: list[str] = []
        self.patterns: list[re.Pattern] = []
        self.literal: list[str] = []
        self.coordinator: int | None = None
        self.heartbeat_timer = None
        self.joined_partitions: dict[str, int] = {}
        self.rejoin_needed = False
        self.fatal: KafkaError | None = None
        self.epoch = 0  # bumps on every (re)join; stale callbacks compare it
        armed(self)

    # -- subscription -----------------------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        """Called on the I/O thread with the new subscription list."""
        self.literal = [t for t in topics if not t.startswith("^")]
        self.patterns = [re.compile(t) for t in topics if t.startswith("^")]
        self.rejoin_needed = True
        if self.state in (UNJOINED, STABLE):
            self._refresh_topics_then_join()

    def matched_topics(self) -> list[str]:
        view = self.client.cluster
        names = set(self.literal)
        if self.patterns:
            for name, info in view.topics.items():
                if info.is_internal or name.startswith("__"):
                    continue
                if any(p.match(name) for p in self.patterns):
                    names.add(name)
        return sorted(names)

    def _refresh_topics_then_join(self) -> None:
        epoch = self.epoch
        f = self.client.request_metadata(self.literal or None, all_topics=bool(self.patterns))

        def done(f: Future) -> None:
            if self.state == CLOSED or epoch != self.epoch:
                return
            self.topics = self.matched_topics()
            self.start_join()

        f.add_done_callback(done)

    def partition_counts(self) -> dict[str, int]:
        view = self.client.cluster
        out = {}
        for t in self.topics:
            info = view.topics.get(t)
            if info is not None and info.error is None and info.partitions:
                out[t] = len(info.partitions)
        return out

    # -- join --------------------------------------------------------------------------------------
    def start_join(self) -> None:
        if self.state == CLOSED or self.fatal is not None:
            return
        self.epoch += 1
        self._cancel_heartbeat()
        if not self.cooperative and self.owned:
            # Eager: give everything back in the poll thread before joining.
            self.state = REVOKING
            owned, self.owned = self.owned, {}
            self.events.post(("revoke", owned, self.epoch))
            return
        self.state = JOINING
        self._find_coordinator(self._send_join)

    def revoke_done(self, epoch: int) -> None:
        """The poll thread finished an eager revocation (I/O thread)."""
        if self.state == REVOKING and epoch == self.epoch:
            self.state = JOINING
            self._find_coordinator(self._send_join)

    def _find_coordinator(self, then) -> None:
        epoch = self.epoch
        f = self.client.coordinator(GROUP, self.group_id)

        def done(f: Future) -> None:
            if self.state == CLOSED or epoch != self.epoch:
                return
            exc = f.exception()
            if exc is not None:
                self._retry_join(error_of(exc))
                return
            self.coordinator = f.result()
            then()

        f.add_done_callback(done)

    def _retry_join(self, err: KafkaError | None, delay: float | None = None) -> None:
        if self.state == CLOSED:
            return
        if err is not None and err.code() not in TRANSIENT_LOCAL and not err.retriable() \
                and err.code() not in REJOIN | REDISCOVER:
            self.events.post_error(err)
        epoch = self.epoch
        self.state = JOINING

        def again() -> None:
            if self.state == JOINING and epoch == self.epoch:
                self.epoch += 1
                self._find_coordinator(self._send_join)

        self.client.call_later(self.backoff if delay is None else delay, again)

    def _send_join(self) -> None:
        epoch = self.epoch
        self.topics = self.matched_topics()
        self.joined_partitions = self.partition_counts()
        sub = Subscription(topics=self.topics, owned=self.owned if self.cooperative else {},
                           generation=self.generation)
        req = versioned_message(m.JoinGroupRequest(
            group_id=self.group_id, session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms, member_id=self.member_id,
            group_instance_id=self.instance_id, protocol_type=self.protocol_type,
            protocols=[m.JoinGroupRequest.JoinGroupRequestProtocol(
                name=a.name, metadata=encode_subscription(sub)) for a in self.assignors],
            reason=None), JOIN_GROUP_MAX_VERSION)
        f = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR,
                             timeout_ms=self.rebalance_timeout_ms + 5000)
        f.add_done_callback(lambda f: self._on_join(f, epoch))

    def _on_join(self, f: Future, epoch: int) -> None:
        if self.state == CLOSED or epoch != self.epoch:
            return
        exc = f.exception()
        if isinstance(exc, ProtocolError):
            # librdkafka's mock cluster sends error answers with null strings in fields that
            # are not nullable; the error itself is lost, so find the coordinator and retry.
            self.client.log.info("JoinGroup response not decodable (%s): retrying", exc)
            self.client.invalidate_coordinator(GROUP, self.group_id)
            self._retry_join(None)
            return
        if exc is not None:
            err = error_of(exc)
            self.client.invalidate_coordinator(GROUP, self.group_id)
            self._retry_join(err)
            return
        resp = f.result()
        code = resp.error_code
        if code == E.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self._retry_join(None, 0.0)
            return
        if code:
            self.handle_group_error(code, "JoinGroup")
            return
        self.member_id = resp.member_id
        self.generation = resp.generation_id
        self.protocol_name = resp.protocol_name
        assignments = []
        if resp.leader == resp.member_id and not resp.skip_assignment:
            try:
                assignments = self._lead(resp)
            except Exception as exc2:
                self.events.post_error(KafkaError.of(E._FAIL, f"assignment failed: {exc2}"))
                self._retry_join(None)
                return
        self.state = SYNCING
        if len(assignments) > 1:
            # Let the followers' SyncGroups reach the coordinator first: some coordinators
            # (librdkafka's mock cluster) only answer followers already waiting when the
            # leader's assignment arrives, and send later ones back into a rebalance.
            self.client.call_later(LEADER_SYNC_DELAY,
                                   lambda: self._send_sync(assignments, epoch)
                                   if self.state == SYNCING and epoch == self.epoch else None)
        else:
            self._send_sync(assignments, epoch)

    def _send_sync(self, assignments: list, epoch: int) -> None:
        req = versioned_message(m.SyncGroupRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance_id, protocol_type=self.protocol_type,
            protocol_name=self.protocol_name, assignments=assignments), SYNC_GROUP_MAX_VERSION)
        f2 = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        f2.add_done_callback(lambda f2: self._on_sync(f2, epoch, assignments))

    def _lead(self, resp) -> list:
        assignor = next(a for a in self.assignors if a.name == resp.protocol_name)
        members = {}
        topics: set[str] = set()
        for mem in resp.members:
            sub = decode_subscription(mem.metadata, mem.group_instance_id)
            members[mem.member_id] = sub
            topics.update(sub.topics)
        view = self.client.cluster
        counts = {}
        for t in topics:
            info = view.topics.get(t)
            if info is not None and info.error is None and info.partitions:
                counts[t] = len(info.partitions)
        missing = sorted(topics - set(counts))
        if missing:
            self.client.request_metadata(missing)
        result = assignor.assign(counts, members)
        SA = m.SyncGroupRequest.SyncGroupRequestAssignment
        return [SA(member_id=mid, assignment=encode_assignment(result.get(mid, {})))
                for mid in members]

    def _on_sync(self, f: Future, epoch: int, assignments: list) -> None:
        if self.state == CLOSED or epoch != self.epoch:
            return
        exc = f.exception()
        if isinstance(exc, ProtocolError):
            # librdkafka's mock cluster answers a SyncGroup that came after the group
            # completed its sync with an error and a null assignment (a field that is not
            # nullable): a rebalance is under way, so join again.
            self.client.log.info("SyncGroup response not decodable (%s): rejoining", exc)
            self._retry_join(None)
            return
        if exc is not None:
            self.client.invalidate_coordinator(GROUP, self.group_id)
            self._retry_join(error_of(exc))
            return
        resp = f.result()
        if resp.error_code:
            self.handle_group_error(resp.error_code, "SyncGroup")
            return
        try:
            assigned = decode_assignment(resp.assignment)
        except Exception as exc2:
            self.events.post_error(KafkaError.of(E._BAD_MSG, f"undecodable assignment: {exc2}"))
            self._retry_join(None)
            return
        self.state = STABLE
        self.rejoin_needed = False
        if self.cooperative:
            old = {(t, p) for t, ps in self.owned.items() for p in ps}
            new = {(t, p) for t, ps in assigned.items() for p in ps}
            revoked = sorted(old - new)
            added = sorted(new - old)
            self.owned = assigned
            self.events.post(("incremental", added, revoked, self.epoch))
            if revoked:
                # Give the revoked partitions back to the group with one more join.
                self.rejoin_needed = True
        else:
            self.owned = assigned
            self.events.post(("assign", sorted((t, p) for t, ps in assigned.items()
                                                 for p in ps), self.epoch))
        self._schedule_heartbeat()

    def incremental_revoke_done(self, epoch: int) -> None:
        """The poll thread applied a cooperative assignment; rejoin if something was revoked."""
        if self.state == STABLE and epoch == self.epoch and self.rejoin_needed:
            self.start_join()

    # -- heartbeats ----------------------------------------------------------------------------
    def _schedule_heartbeat(self) -> None:
        self._cancel_heartbeat()
        epoch = self.epoch
        self.heartbeat_timer = self.client.call_later(self.heartbeat_interval,
                                                      lambda: self._heartbeat(epoch))

    def _cancel_heartbeat(self) -> None:
        if self.heartbeat_timer is not None:
            self.heartbeat_timer.cancel()
            self.heartbeat_timer = None

    def _heartbeat(self, epoch: int) -> None:
        if self.state != STABLE or epoch != self.epoch:
            return
        if self.poll_watch.exceeded(self.max_poll_interval):
            self.events.post_error(KafkaError.of(
                E._MAX_POLL_EXCEEDED,
                f"Application maximum poll interval ({self.max_poll_interval * 1000:.0f}ms) "
                f"exceeded: leaving the group"))
            self.leave()
            self._lost()
            self.state = UNJOINED
            self.poll_watch.rejoin_on_next_poll()
            return
        if self.partition_counts() != self.joined_partitions or \
                (self.patterns and self.matched_topics() != self.topics):
            self.rejoin_needed = True
        if self.rejoin_needed:
            self.start_join()
            return
        req = versioned_message(m.HeartbeatRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=self.instance_id))
        f = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        f.add_done_callback(lambda f: self._on_heartbeat(f, epoch))

    def _on_heartbeat(self, f: Future, epoch: int) -> None:
        if self.state != STABLE or epoch != self.epoch:
            return
        exc = f.exception()
        if exc is not None:
            # No answer (the coordinator's broker may be gone): the membership stands.
            self.client.log.debug("Heartbeat to coordinator %s failed: %s", self.coordinator,
                                  exc)
            self._rediscover(epoch)
            return
        code = f.result().error_code
        if code == 0:
            self._schedule_heartbeat()
            return
        if code in REDISCOVER:
            self._rediscover(epoch)
            return
        if code == E.COORDINATOR_LOAD_IN_PROGRESS:
            self._schedule_heartbeat()
            return
        self.handle_group_error(code, "Heartbeat")

    def _rediscover(self, epoch: int) -> None:
        """Find the coordinator again and heartbeat on in the same generation.

        Only the coordinator's answers end a membership (UNKNOWN_MEMBER_ID,
        ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID): the broker that
        takes a group over restarts every member's session when it loads the group, and a
        live coordinator that expired the member says so at the next heartbeat that reaches
        it. So a failed look-up is retried, never turned into a join.
        """
        if self.state != STABLE or epoch != self.epoch:
            return
        self.client.invalidate_coordinator(GROUP, self.group_id)
        f = self.client.coordinator(GROUP, self.group_id)

        def done(f: Future) -> None:
            if self.state != STABLE or epoch != self.epoch:
                return
            if f.exception() is not None:
                self.client.call_later(self.backoff, lambda: self._rediscover(epoch))
                return
            node = f.result()
            if node == self.coordinator:
                self._schedule_heartbeat()  # not moved (yet): try it again in a while
                return
            self.client.log.info("group %s: coordinator moved from %s to %s", self.group_id,
                                 self.coordinator, node)
            self.coordinator = node
            self._heartbeat(epoch)

        f.add_done_callback(done)

    def handle_group_error(self, code: int, api: str) -> None:
        err = KafkaError.of(code, f"{api}: {KafkaError.of(code)}")
        self.client.log.debug("group %s: %s", self.group_id, err.str())
        if code == E.FENCED_INSTANCE_ID:
            self.fatal = KafkaError.of(E._FENCED, f"{api}: {KafkaError.of(code)} (group.instance.id "
                                               f"{self.instance_id} is used by another member)",
                                    fatal=True)
            self._lost()
            self.state = UNJOINED
            self.events.post_error(self.fatal)
            return
        if code in REDISCOVER:
            self.client.invalidate_coordinator(GROUP, self.group_id)
            self._retry_join(err, 0.0 if self.state != STABLE else None)
            return
        if code == E.COORDINATOR_LOAD_IN_PROGRESS:
            self._retry_join(err)
            return
        if code in (E.UNKNOWN_MEMBER_ID, E.ILLEGAL_GENERATION):
            if code == E.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self.generation = -1
            self._lost()
            self.epoch += 1
            self.start_join()
            return
        if code == E.REBALANCE_IN_PROGRESS:
            self.epoch += 1
            self.start_join()
            return
        if code in (E.GROUP_AUTHORIZATION_FAILED, E.INCONSISTENT_GROUP_PROTOCOL,
                    E.INVALID_SESSION_TIMEOUT, E.GROUP_MAX_SIZE_REACHED,
                    E.INVALID_GROUP_ID):
            self.events.post_error(err)
            self._retry_join(None, max(self.backoff, 1.0))
            return
        self._retry_join(err)

    def _lost(self) -> None:
        if self.owned:
            owned, self.owned = self.owned, {}
            self.events.post(("lost", owned, self.epoch))

    # -- leaving --------------------------------------------------------------------------------
    def leave(self) -> Future | None:
        """Send LeaveGroup (not for static members, who keep their assignment for the session)."""
        self._cancel_heartbeat()
        if self.coordinator is None or not self.member_id or self.instance_id:
            return None
        req = versioned_message(m.LeaveGroupRequest(
            group_id=self.group_id, member_id=self.member_id,
            members=[m.LeaveGroupRequest.MemberIdentity(member_id=self.member_id,
                                                        group_instance_id=self.instance_id,
                                                        reason="the consumer is closing")]))
        self.member_id = ""
        self.generation = -1
        try:
            f = self.client.send(self.coordinator, req, lane=Lane.COORDINATOR)
        except Exception as exc:  # the client is closing: the coordinator times us out
            log.debug("LeaveGroup for %s not sent: %s", self.group_id, exc)
            return None
        return f

    def close(self) -> Future | None:
        f = self.leave()
        self.state = CLOSED
        self.epoch += 1
        return f
