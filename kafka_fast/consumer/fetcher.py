"""The fetcher: runs on the client's I/O thread as a poll hook.

Each iteration it resolves missing positions (committed offset, then ``auto.offset.reset``),
and sends one Fetch per partition leader holding every fetchable partition that leader leads,
to every leader at once, while the prefetch queue is under its budget
(``queued.max.messages.kbytes`` / ``queued.min.messages``). Responses arrive as per-partition
columns (``fetch_wire``: read by a compiled walk without the interpreter lock), are decoded on
the I/O thread (CRC, decompression and columns in the record engine; read_committed
filtering) and queued as ``Chunk``s for the application thread. Each turn starts by applying the commands
the application thread queued (seeks, pauses, resumes, assignment changes, validation
outcomes): the fetch cursors (``state.FetchCursor``) are written on the I/O thread only. With ``fetch.sessions`` each leader's Fetches
go through its incremental fetch session (``fetch_session``).

Follower fetching (KIP-392): with ``client.rack`` set, a leader may name a preferred read
replica for a partition (Fetch v11+); that partition is then fetched from the replica (with the
leader's epoch as CurrentLeaderEpoch) until ``metadata.max.age.ms`` passes, the replica fails or
answers with an error, or it leaves the partition's replicas in metadata. Each node has its own
fetch session: a partition moving between nodes is forgotten by one and added to the other.
"""

from __future__ import annotations

import logging
import struct
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ..config.consumer import OFFSET_RESET
from ..errors import KafkaError, KafkaException
from ..net.lanes import Lane
from ..protocol import messages as m
from ..protocol.versioned import VersionedRequest, fit
from ..topic_partition import OFFSET_BEGINNING, OFFSET_END
from .fetch_decode import DecodedPartition, decode_partition
from .fetch_session import SESSION_ERRORS, FetchPlan, FetchSession, fetch_request
from .fetch_state import Chunk, Command, FetchState
from .fetch_wire import TOPIC_ID_VERSION, as_wire, decode_fetch
from .offsets import LEADER_ERRORS, TRANSIENT_LOCAL, OffsetClient, error_of
from .ownership import armed, owned
from .state import NEED_COMMITTED, NEED_NONE, NEED_RESET, NEED_VALIDATE, FetchCursor
from .validation import Validator

if TYPE_CHECKING:
    from ..config.table import Config
    from ..net import KafkaClient

E = KafkaError
log = logging.getLogger("kafka_fast.consumer")
_RESET = {"earliest": OFFSET_BEGINNING, "latest": OFFSET_END, "error": None}


def _covers(topic_ids: dict[str, Any], plan: FetchPlan) -> bool:
    """True if ``topic_ids`` has an ID for every topic ``plan`` names."""
    return all(topic_ids.get(t) is not None
               for t, _ in (*plan.send, *plan.forgotten))


def reset_strategy(conf: Config) -> int | None:
    """``auto.offset.reset`` as OFFSET_BEGINNING / OFFSET_END, or None for ``error``."""
    return _RESET[OFFSET_RESET[conf["auto.offset.reset"]]]
#: A partition's records below this size are decoded on the I/O thread.
DECODE_MIN_BYTES = 64 * 1024
#: Threads besides the I/O thread that decode the partitions of one response.
DECODE_THREADS = 2
#: The newest Fetch this consumer sends; from 13 on topics are named by ID (KIP-516), which
#: needs an ID for every topic of the request (else 12, by name).
FETCH_MAX_VERSION = 18
#: Answers to a Fetch by topic ID that mean our metadata is behind: look the topic up again
#: (a new ID means it was created again; see ``_recreated``).
TOPIC_ID_ERRORS = frozenset({E.UNKNOWN_TOPIC_ID, E.INCONSISTENT_TOPIC_ID,
                             E.FETCH_SESSION_TOPIC_ID_ERROR})
#: Seconds Fetches leave out ``client.rack`` after a read replica failed: a leader goes on
#: naming a replica it still counts as caught up (up to its replica.lag.time.max.ms, 30 s by
#: default) and answers without records when it does, so for this long the leaders serve the
#: records themselves. Partitions already on a working replica stay there.
READ_REPLICA_RETRY = 30.0
#: A bounded partition's Fetch (``Consumer.fetch_until``) asks for what its records left take
#: at the topic's bytes per offset so far, times this margin, and at least
#: ``BOUNDED_FETCH_MIN`` (a batch of a topic at Kafka's default ``max.message.bytes``; the
#: first Fetch of a topic asks for that).
BOUNDED_FETCH_MARGIN = 1.1
BOUNDED_FETCH_MIN = (1 << 20) + (64 << 10)


_BATCH_HEAD = struct.Struct(">qii")  # base offset, batch length, partition leader epoch
_LAST_DELTA = struct.Struct(">i")
_LOG_OVERHEAD = 12
_MIN_BATCH = 26  # the smallest legacy message; RecordBatches are at least 61


def next_offset_after(records, offset: int) -> tuple[int, int]:
    """The offset after the last complete batch in ``records`` (``offset`` if none) and that
    batch's leader epoch (-1 if none or a legacy message), read from batch headers alone."""
    end, epoch = offset, -1
    if records is None:
        return end, epoch
    pos = 0
    n = len(records)
    while n - pos >= _MIN_BATCH:
        if n - pos < 27:
            break
        base, length, batch_epoch = _BATCH_HEAD.unpack_from(records, pos)
        size = _LOG_OVERHEAD + length
        if length < _MIN_BATCH - _LOG_OVERHEAD or pos + size > n:
            break
        if records[pos + 16] >= 2:
            last = base + _LAST_DELTA.unpack_from(records, pos + 23)[0] + 1
        else:  # a legacy message (set wrapper) carries its last offset
            last, batch_epoch = base + 1, -1
        if last > end:
            end, epoch = last, batch_epoch
        pos += size
    return end, epoch


def _worth_a_thread(records: Any) -> bool:
    """True for records worth decoding on a thread of their own: large, and compressed
    (read from the first batch's attributes)."""
    if records is None or len(records) < DECODE_MIN_BYTES or records[16] < 2:
        return False
    return bool(records[22] & 0x07)


def sent_entry(ps: FetchCursor) -> tuple:
    """What a Fetch response for ``ps`` is checked against: the cursor, its version, the
    fetch offset, fetch sequence and fetch epoch at the time of sending."""
    return (ps, ps.version, ps.fetch_offset, ps.fetch_seq, ps.fetch_epoch)


@owned
class Fetcher:
    """Fetch scheduling and response handling (I/O thread only).

    Every field is written on the I/O thread after construction (``ownership`` checks it):
    another thread stops the fetcher with ``release``, which queues a ``close`` command and
    shuts the decoder pool down (the pool is the executor's own, made at construction and
    never replaced; it starts no thread before its first use).
    """

    def __init__(self, state: FetchState, client: KafkaClient, conf: Config,
                 offsets: OffsetClient) -> None:
        self.state = state
        self.client = client
        self.offsets = offsets
        self.group_id: str = conf["group.id"]
        self.reset_strategy = reset_strategy(conf)
        self.request_timeout_ms: int = conf["request.timeout.ms"]
        self.max_wait_ms = conf["fetch.wait.max.ms"]
        self.min_bytes = conf["fetch.min.bytes"]
        self.max_bytes = conf["fetch.max.bytes"]
        self.partition_max_bytes = conf["max.partition.fetch.bytes"]
        #: bytes per offset of the records last fetched of each topic, to size a bounded
        #: partition's Fetch (``fetch_size``)
        self.offset_bytes: dict[str, float] = {}
        #: bounded partitions whose last Fetch brought no record (nothing, or part of a batch)
        #: while records were there: their next one asks for ``max.partition.fetch.bytes``
        self.short_fetch: set[tuple[str, int]] = set()
        self.queue_max_bytes = conf["queued.max.messages.kbytes"] * 1024
        self.queue_min_records = conf["queued.min.messages"]
        self.error_backoff = conf["fetch.error.backoff.ms"] / 1000.0
        self.read_committed = conf["isolation.level"] == "read_committed"
        self.check_crcs = conf["check.crcs"]
        self.eof_enabled = conf["enable.partition.eof"]
        self.rack = conf["client.rack"]
        #: how long a preferred read replica is used before the leader is asked again
        self.read_replica_age = conf["metadata.max.age.ms"] / 1000.0
        #: until this monotonic time Fetches carry no rack (a read replica failed)
        self.rack_paused_until = 0.0
        self.use_sessions = conf["fetch.sessions"]
        self.sessions: dict[int, FetchSession] = {}
        #: Per broker, the topic IDs its fetch session was given (None: named by name).
        self.session_ids: dict[int, dict[str, Any]] = {}
        self.inflight: set[int] = set()
        self.awaiting_metadata = False
        self.next_leader_check = 0.0
        #: set by ``shutdown`` or a ``close`` command (I/O thread)
        self.closed = False
        #: threads decoding the partitions of one response side by side (started on use)
        self.decoders = ThreadPoolExecutor(DECODE_THREADS,
                                           thread_name_prefix="kafka_fast-decode")
        self.validator = Validator(state, client, self.reset_strategy, self.error_backoff)
        #: topic -> error code reported for it (a refusal is reported once until it clears)
        self.topic_errors: dict[str, int] = {}
        self.errors_seen_in: object = None
        armed(self)

    def _metadata_arrived(self, f: Future) -> None:
        self.awaiting_metadata = False
        if f.exception() is not None:
            self.client.call_later(self.error_backoff, self.client.wakeup)
        else:
            self.client.wakeup()

    def _report_topic_errors(self, view, topics: set[str]) -> None:
        """An assigned topic the cluster refuses outright (TOPIC_AUTHORIZATION_FAILED, ...) is
        reported once, until metadata shows it without that error."""
        for topic in topics:
            info = view.topics.get(topic)
            err = info.error if info is not None else None
            if err is None or err.retriable():
                self.topic_errors.pop(topic, None)
                continue
            if self.topic_errors.get(topic) != err.code():
                self.topic_errors[topic] = err.code()
                self.state.post_error(KafkaError.of(err.code(), f"topic {topic}: {err.str()}"))

    # -- commands from the application thread ------------------------------------------------------
    def apply(self, cmd: Command) -> None:
        """Apply one command of the application thread (I/O thread, state lock held)."""
        kind, app = cmd[0], cmd[1]
        if kind == "close":
            self.closed = True
            return
        cursors = self.state.cursors
        key = (app.topic, app.partition)
        cur = cursors.get(key)
        if kind == "seek":
            _, _, gen, offset, epoch, paused = cmd
            if cur is None or cur.app is not app:
                cur = cursors[key] = FetchCursor(app, gen)
            cur.gen = gen
            cur.paused = paused
            if offset >= 0:
                cur.set_position(offset, epoch)
            elif offset in (OFFSET_BEGINNING, OFFSET_END):
                cur.require(NEED_RESET, offset)
            else:
                cur.require(NEED_COMMITTED if self.group_id else NEED_RESET, None)
            return
        if cur is None or cur.app is not app:
            return
        if kind == "remove":
            del cursors[key]
            cur.version += 1
        elif kind in ("pause", "resume"):
            _, _, gen, position = cmd
            cur.paused = kind == "pause"
            cur.version += 1
            cur.gen = gen
            if cur.need == NEED_NONE and position >= 0:
                cur.fetch_offset = position
        elif kind == "truncated":
            _, _, gen, action, offset, epoch, current, stop = cmd
            cur.resolving = False
            if action is None:
                return
            cur.gen = gen
            if action == "fetch":
                cur.set_position(offset, epoch)
                cur.known_leader_epoch = current
            else:
                cur.require(NEED_RESET, self.reset_strategy)
                if stop:
                    cur.error_reported = True
        else:
            raise ValueError(f"unknown fetcher command {kind!r}")

    # -- scheduling ----------------------------------------------------------------------------
    def tick(self) -> float | None:
        """Poll hook: returns the longest the I/O loop may sleep."""
        if self.closed:
            return None
        state = self.state
        now = time.monotonic()
        wait = 0.5
        to_resolve = []
        to_validate = []
        leaderless: set[str] = set()
        stale: set[str] = set()
        by_node: dict[int, list[FetchCursor]] = defaultdict(list)
        recreated: list[KafkaError] = []
        view = self.client.cluster
        if view is not self.errors_seen_in:  # new metadata: any assigned topic refused?
            self.errors_seen_in = view
            self._report_topic_errors(view, state.topics())
        with state.lock:
            for cmd in state.take_commands():
                self.apply(cmd)
            if self.closed:
                return None
            if not state.cursors:
                self.close_sessions()
                return None
            full = state.full(self.queue_max_bytes, self.queue_min_records)
            for ps in state.cursors.values():
                if ps.need == NEED_VALIDATE:
                    if ps.resolving:
                        continue
                    if now >= ps.backoff_until:
                        to_validate.append(ps)
                    else:
                        wait = min(wait, ps.backoff_until - now)
                    continue
                if ps.need and not ps.resolving:
                    to_resolve.append(ps)
                    continue
                if full or not ps.fetchable(now):
                    if ps.backoff_until > now:
                        wait = min(wait, ps.backoff_until - now)
                    continue
                if state.fetched_to_end(ps.topic, ps.partition, ps.fetch_offset):
                    continue  # fetched up to where the application asked
                if self._recreated(ps, view, recreated):
                    continue
                node = self.client.leader(ps.topic, ps.partition)
                if node is None:
                    leaderless.add(ps.topic)
                    continue
                if ps.needs_validation(view.leader_epoch(ps.topic, ps.partition)):
                    ps.need = NEED_VALIDATE
                    to_validate.append(ps)
                    continue
                node = self._read_node(ps, node, view, now, stale)
                if node in self.inflight:
                    continue
                by_node[node].append(ps)
        for err in recreated:
            state.post_error(err)
        if to_resolve:
            self._resolve(to_resolve)
        if to_validate:
            self.validator.start(to_validate)
        if leaderless and not self.awaiting_metadata:
            # Fetch again as soon as the leaders are known.
            self.awaiting_metadata = True
            self.client.request_metadata(sorted(leaderless)).add_done_callback(
                self._metadata_arrived)
        if stale:
            self.client.request_metadata(sorted(stale))
        unreachable: set[str] = set()
        for node, parts in by_node.items():
            if self.client.node_ready(node, Lane.FETCH):
                self._send(node, parts)
            elif self.client.node_unreachable(node, Lane.FETCH):
                if self._leave_replica(node, parts):
                    self.client.wakeup()  # fetch them from their leaders right away
                    continue
                unreachable.update(ps.topic for ps in parts)
        if unreachable and now >= self.next_leader_check:
            # The leader cannot be reached: leadership may have moved elsewhere.
            self.next_leader_check = now + self.error_backoff
            self.client.request_metadata(sorted(unreachable))
        return wait

    def _recreated(self, ps: FetchCursor, view, errors: list[KafkaError]) -> bool:
        """Pin the position to the topic's incarnation (its ID) on its first fetch; True,
        with the position reset by ``auto.offset.reset`` and an error added to ``errors``,
        when metadata now gives the topic another ID: it was deleted and created again, and
        the offset means nothing in the new one (caller holds the state lock)."""
        info = view.topics.get(ps.topic)
        topic_id = info.topic_id if info is not None else None
        if ps.topic_id is None or topic_id is None:
            ps.topic_id = ps.topic_id or topic_id
            return False
        if topic_id == ps.topic_id:
            return False
        old, offset = ps.topic_id, ps.fetch_offset
        ps.require(NEED_RESET, self.reset_strategy)
        ps.topic_id = None
        errors.append(KafkaError.of(E.UNKNOWN_TOPIC_ID, (
            f"{ps.topic} [{ps.partition}] was deleted and created again (topic id {old} is now "
            f"{topic_id}): position {offset} dropped, reset by auto.offset.reset")))
        return True

    def _read_node(self, ps: FetchCursor, leader: int, view, now: float,
                   stale: set[str]) -> int:
        """The node to fetch ``ps`` from: its preferred read replica while that holds and is
        online in metadata, else ``leader`` (caller holds the lock). A replica missing from
        metadata is dropped and ``ps.topic`` added to ``stale`` (metadata to refresh)."""
        replica = ps.preferred_replica(now)
        if replica < 0 or replica == leader:
            return leader
        if view.replica_online(ps.topic, ps.partition, replica):
            return replica
        log.debug("%s [%d]: preferred read replica %d is not online, fetching from leader %d",
                  ps.topic, ps.partition, replica, leader)
        ps.clear_read_replica()
        stale.add(ps.topic)
        return leader

    def _leave_replica(self, node: int, parts: list[FetchCursor]) -> bool:
        """Partitions of ``parts`` preferring the unreachable ``node`` go back to their
        leaders; True if all of them did."""
        with self.state.lock:
            moved = [ps for ps in parts if ps.read_replica == node]
            for ps in moved:
                ps.clear_read_replica()
        if moved:
            self.rack_paused_until = time.monotonic() + READ_REPLICA_RETRY
            log.debug("read replica %d unreachable: fetching %d partition(s) from leaders",
                      node, len(moved))
        return len(moved) == len(parts)

    def _leaves_replica(self, ps: FetchCursor, node: int) -> bool:
        """After a failed fetch or an error from ``node``: True if ``node`` was the preferred
        read replica of ``ps`` rather than its leader (``ps`` then goes back to the leader).
        Caller holds the lock."""
        replica = ps.clear_read_replica()
        if replica < 0 or replica != node or replica == self.client.leader(ps.topic,
                                                                           ps.partition):
            return False
        self.rack_paused_until = time.monotonic() + READ_REPLICA_RETRY
        return True

    def session(self, node: int) -> FetchSession:
        session = self.sessions.get(node)
        if session is None:
            session = self.sessions[node] = FetchSession(self.use_sessions)
        return session

    def request_for(self, plan: FetchPlan, max_wait_ms: int | None = None,
                    topic_ids: dict[str, Any] | None = None):
        """The Fetch request carrying ``plan`` (fitted to the negotiated version): topics by
        ID (v13+) when ``topic_ids`` names every topic of the plan, else by name (v12)."""
        wait = self.max_wait_ms if max_wait_ms is None else max_wait_ms
        rack = self.rack if time.monotonic() >= self.rack_paused_until else ""
        ids = topic_ids if topic_ids is not None and _covers(topic_ids, plan) else None

        def build(version: int):
            return fit(fetch_request(
                plan, max_wait_ms=wait, min_bytes=self.min_bytes, max_bytes=self.max_bytes,
                isolation_level=1 if self.read_committed else 0, rack_id=rack,
                topic_ids=ids if version >= TOPIC_ID_VERSION else None), version)

        return VersionedRequest(m.FetchRequest, build,
                                FETCH_MAX_VERSION if ids is not None else TOPIC_ID_VERSION - 1,
                                decode_response=decode_fetch)

    def fetch_size(self, ps: FetchCursor) -> int:
        """``PartitionMaxBytes`` of the next Fetch of ``ps``: ``max.partition.fetch.bytes``,
        or for a partition fetched up to a bound (``fetch_until``) about what the records left take, by
        the topic's bytes per offset so far (with a margin, at least ``BOUNDED_FETCH_MIN``),
        so that a bounded read does not fetch far past its end."""
        key = (ps.topic, ps.partition)
        end = self.state.fetch_end(ps.topic, ps.partition)
        per = self.offset_bytes.get(ps.topic)
        if end < 0 or key in self.short_fetch:
            self.short_fetch.discard(key)
            return self.partition_max_bytes
        want = BOUNDED_FETCH_MIN if per is None else max(
            BOUNDED_FETCH_MIN, int((end - ps.fetch_offset) * per * BOUNDED_FETCH_MARGIN))
        return min(self.partition_max_bytes, want)

    def _send(self, node: int, parts: list[FetchCursor]) -> None:
        sent = []
        wanted = {}
        view = self.client.cluster
        with self.state.lock:
            for ps in parts:
                if not ps.fetchable(time.monotonic()):
                    continue
                if self.state.fetched_to_end(ps.topic, ps.partition, ps.fetch_offset):
                    continue
                ps.fetching = True
                sent.append(sent_entry(ps))
                # CurrentLeaderEpoch: the leader's epoch as we know it, so a leader that has
                # moved on (or is behind) says so instead of answering.
                epoch = view.leader_epoch(ps.topic, ps.partition)
                if epoch > ps.known_leader_epoch:
                    ps.known_leader_epoch = epoch
                wanted[(ps.topic, ps.partition)] = (ps.fetch_offset, epoch,
                                                    self.fetch_size(ps))
        if not sent:
            return
        session = self.session(node)
        ids = {ps.topic: ps.topic_id for ps, *_ in sent}
        if self.session_ids.get(node) != ids and session.active:
            # A fetch session names topics the way it began (by ID or name, with those IDs):
            # a topic created again, or one without an ID, starts a new session.
            known = self.session_ids.get(node) or {}
            if any(known.get(t, ids[t]) != ids[t] for t in ids) or (
                    None in ids.values()) != (None in known.values()):
                session.reset()
        ids = self.session_ids[node] = {**self.session_ids.get(node, {}), **ids}
        plan = session.plan(wanted)
        self.inflight.add(node)
        try:
            fut = self.client.send(node, self.request_for(plan, topic_ids=ids),
                                   timeout_ms=self.request_timeout_ms
                                   + self.max_wait_ms, lane=Lane.FETCH)
        except KafkaException:
            self.inflight.discard(node)
            session.reset()
            with self.state.lock:
                for ps, *_ in sent:
                    ps.fetching = False
            return
        fut.add_done_callback(lambda f: self.on_response(node, sent, plan, f))

    def shutdown(self) -> list[Future]:
        """Stop fetching and close the open fetch sessions (I/O thread)."""
        self.closed = True
        self.decoders.shutdown(wait=False)
        return self.close_sessions()

    def release(self) -> None:
        """Stop fetching and the decoder threads (any thread): the I/O thread closes the
        fetcher at its next turn (a ``close`` command; nothing is written here)."""
        # No lock: a dropped consumer's finalizer calls this, and a garbage collection may run
        # it on the I/O thread while that thread holds the state lock. Appending to the command
        # deque is atomic, and the I/O thread takes commands one at a time.
        self.state.command(("close", None))
        self.decoders.shutdown(wait=False)

    def close_sessions(self) -> list[Future]:
        """Send a closing Fetch (epoch -1) for every open session whose leader is idle."""
        futures = []
        for node, session in list(self.sessions.items()):
            if node in self.inflight or not session.active:
                continue
            plan = session.close_plan()
            if plan is None:
                continue
            try:
                futures.append(self.client.send(
                    node, self.request_for(plan, max_wait_ms=0,
                                           topic_ids=self.session_ids.get(node)),
                    timeout_ms=self.request_timeout_ms, lane=Lane.FETCH))
            except KafkaException as exc:  # the broker forgets the session in time anyway
                log.debug("closing the fetch session with broker %d failed: %s", node, exc)
        return futures

    # -- responses -----------------------------------------------------------------------------
    def on_response(self, node: int, sent, plan: FetchPlan, fut: Future) -> None:
        self.inflight.discard(node)
        state = self.state
        exc = fut.exception()
        now = time.monotonic()
        session = self.session(node)
        if exc is not None:
            session.reset()
            err = error_of(exc)
            with state.lock:
                for ps, *_ in sent:
                    ps.fetching = False
                    # A failed read replica: back to the leader now, without backing off.
                    if not self._leaves_replica(ps, node):
                        ps.backoff_until = now + self.error_backoff
            if err.code() not in (E._DESTROY,):
                self.client.request_metadata(sorted({ps.topic for ps, *_ in sent}))
            self.client.wakeup()
            return
        # The response's columns (``fetch_wire``): partition ``i`` of it is row ``i``.
        resp = as_wire(fut.result(), getattr(fut, "api_version", 0) or 0)
        omitted_unchanged = session.handle_response(plan, resp)
        if resp.error_code in SESSION_ERRORS:
            # The session is gone or out of step: the next Fetch is a full one, sent now.
            with state.lock:
                for ps, *_ in sent:
                    ps.fetching = False
            self.client.wakeup()
            return
        if resp.error_code:
            with state.lock:
                for ps, *_ in sent:
                    ps.fetching = False
                    ps.clear_read_replica()
                    ps.backoff_until = now + self.error_backoff
            state.post_error(KafkaError.of(resp.error_code, f"Fetch from broker {node} failed: "
                                                      f"{KafkaError.of(resp.error_code)}"))
            return
        lookup = {(entry[0].topic, entry[0].partition): entry for entry in sent}
        items = []
        answered = set()
        topics = resp.topics
        if resp.version >= TOPIC_ID_VERSION:
            names = {entry[0].topic_id: entry[0].topic for entry in sent}
            topics = [names.get(topic_id) for topic_id in topics]
        for i, (t, partition) in enumerate(zip(resp.topic_index, resp.partition_index,
                                                   strict=True)):
            key = (topics[t], partition)
            entry = lookup.get(key)
            if entry is not None:
                answered.add(key)
                items.append((entry, i))
        # Move every fetch position past the complete batches first (batch headers only)
        # and send the next Fetch, so the broker prepares it while this one is decoded.
        # A partition a read replica answered with an error goes back to its leader first.
        left_replica: set[tuple[str, int]] = set()
        errors = resp.partition_error
        with state.lock:
            for (ps, version, offset, seq, _), i in items:
                code = errors[i]
                if code and self._leaves_replica(ps, node):
                    left_replica.add((ps.topic, ps.partition))
                if code == 0 and ps.version == version and ps.fetch_seq == seq:
                    end, epoch = next_offset_after(resp.records(i), offset)
                    if end > ps.fetch_offset:
                        ps.fetch_offset = end
                        ps.fetch_epoch = epoch
                    replica = resp.preferred_read_replica[i]
                    if replica >= 0:
                        # KIP-392: the leader names the replica to read from (this answer's
                        # records, if any, are still used; the position is unchanged).
                        if replica != ps.read_replica:
                            log.debug("%s [%d]: preferred read replica %d (from %d)",
                                      ps.topic, ps.partition, replica, node)
                        ps.prefer_replica(replica, now + self.read_replica_age)
            for key, (ps, *_) in lookup.items():
                ps.fetching = False
                if key not in answered and not omitted_unchanged:
                    ps.backoff_until = now + self.error_backoff
        self.tick()
        chunks = []
        metadata_topics: set[str] = set()
        decoded = self._decode_side_by_side(resp, items)
        for entry, i in items:
            from_replica = (entry[0].topic, entry[0].partition) in left_replica
            chunk = self._partition(entry, resp, i, now, metadata_topics, decoded.get(i),
                                    from_replica)
            if chunk is not None:
                chunks.append(chunk)
                eof = self._eof_after(entry[0], chunk, resp, i)
                if eof is not None:
                    chunks.append(eof)
        if chunks:
            state.enqueue(chunks)
        if metadata_topics:
            self.client.request_metadata(sorted(metadata_topics))

    def _eof_after(self, ps: FetchCursor, chunk: Chunk, resp, i: int) -> Chunk | None:
        """The end-of-partition chunk to hand out right after ``chunk`` of ``ps`` (row ``i``
        of ``resp``) when it reaches the end: in an incremental fetch session the broker
        leaves an unchanged partition out of later answers, so an empty answer at the end
        may never come."""
        if not self.eof_enabled or chunk.eof or chunk.error is not None or ps.eof_reported:
            return None
        end = self._end_of(resp, i)
        if chunk.next_offset < end:
            return None
        ps.eof_reported = True
        return Chunk(ps.app, chunk.gen, [], chunk.next_offset, 0, 0, eof=True)

    def _end_of(self, resp, i: int) -> int:
        """Where row ``i`` of ``resp`` ends for this consumer: the last stable offset
        (read_committed, when known), else the high watermark."""
        lso = resp.last_stable_offset[i]
        return lso if (self.read_committed and lso >= 0) else resp.high_watermark[i]

    def _decode(self, offset: int, resp: Any, i: int) -> DecodedPartition:
        """Decode the records of row ``i`` of ``resp`` (any thread: the record engine and
        the codecs release the interpreter lock while they work)."""
        aborted = None
        if self.read_committed and resp.aborted_count[i] > 0:
            aborted = resp.aborted_transactions(i)
        return decode_partition(resp.records(i), offset, read_committed=self.read_committed,
                                aborted_transactions=aborted, verify_crc=self.check_crcs)

    def _decode_side_by_side(self, resp: Any, items: list) -> dict[int, DecodedPartition]:
        """With several large compressed partitions in one response, decode them on the
        decoder threads and this one at once; ``{row: decoded}`` (empty: decode each when
        it is handled)."""
        errors = resp.partition_error
        work = [(i, entry[2]) for entry, i in items
                if errors[i] == 0 and _worth_a_thread(resp.records(i))]
        if len(work) < 2:
            return {}
        try:
            futures = [(i, self.decoders.submit(self._decode, offset, resp, i))
                       for i, offset in work[1:]]
        except RuntimeError:  # the pool was shut down (the consumer is closing)
            return {}
        i, offset = work[0]
        out = {i: self._decode(offset, resp, i)}
        for i, fut in futures:
            out[i] = fut.result()
        return out

    def _partition(self, entry: tuple, resp: Any, i: int, now: float, metadata_topics: set,
                   decoded: DecodedPartition | None = None,
                   from_replica: bool = False) -> Chunk | None:
        """The Chunk for row ``i`` of a Fetch response (``entry`` is what was sent: state,
        version, offset, fetch sequence and epoch; ``decoded`` its records if they were
        decoded already; ``from_replica``: answered by its read replica, not its
        leader)."""
        ps, version, offset, seq, epoch = entry
        code = resp.partition_error[i]
        state = self.state
        if code:
            if from_replica:
                # An error from a read replica (not in sync, not a replica any more, another
                # leader epoch, or an offset it does not have yet: a follower may be behind
                # the leader's high watermark): fetch from the leader at the same position,
                # as the Java consumer does.
                log.debug("%s [%d]: read replica answered %s at offset %d, fetching from "
                          "the leader", ps.topic, ps.partition, KafkaError.of(code).name(),
                          offset)
                if code in LEADER_ERRORS or code in TOPIC_ID_ERRORS:
                    metadata_topics.add(ps.topic)
                return None
            if code == E.OFFSET_OUT_OF_RANGE:
                with state.lock:
                    if ps.version == version:
                        # Records queued before are not handed out: the position is reset.
                        ps.require(NEED_RESET, self.reset_strategy)
                        state.discard(ps.app)
                return None
            with state.lock:
                ps.backoff_until = now + self.error_backoff
            if code in LEADER_ERRORS or code in TOPIC_ID_ERRORS:
                metadata_topics.add(ps.topic)
            else:
                state.post_error(KafkaError.of(code, f"Fetch of {ps.topic} [{ps.partition}] at offset "
                                               f"{offset}: {KafkaError.of(code)}"))
            return None
        if decoded is None:
            decoded = self._decode(offset, resp, i)
        with state.lock:
            if ps.version != version or ps.fetch_seq != seq:
                return None
            return self._apply_decoded(ps, version, offset, epoch, resp, i, decoded, now)

    def _apply_decoded(self, ps: FetchCursor, version: int, offset: int, epoch: int, resp,
                       i: int, decoded, now: float) -> Chunk | None:
        """Move ``ps`` past ``decoded``, the records of row ``i`` of ``resp`` (caller holds
        the lock): the chunk to queue, if any. A decoding error travels in the chunk, after
        the records before it."""
        ps.high_watermark = resp.high_watermark[i]
        ps.last_stable_offset = resp.last_stable_offset[i]
        ps.log_start_offset = resp.log_start_offset[i]
        report = None
        if decoded.error is not None:
            # Deliver what precedes the corrupt batch; fetch the batch again after the
            # backoff (ignoring any Fetch already sent past it): nothing is skipped. The
            # error is reported once per offset.
            good = decoded.next_offset > offset
            ps.refetch(decoded.next_offset, decoded.last_epoch if good else epoch)
            ps.backoff_until = now + self.error_backoff
            if ps.bad_offset != decoded.next_offset:
                ps.bad_offset = decoded.next_offset
                report = KafkaError.of(E._BAD_MSG, f"{ps.topic} [{ps.partition}] at offset "
                                                f"{decoded.next_offset}: "
                                                f"{decoded.error.args[0].str()}")
        elif decoded.next_offset > ps.fetch_offset:
            ps.fetch_offset = decoded.next_offset
            ps.fetch_epoch = decoded.last_epoch
        if decoded.count and decoded.next_offset > offset:
            self.offset_bytes[ps.topic] = (max(resp.records_len[i], 0)
                                           / (decoded.next_offset - offset))
        elif decoded.next_offset == offset and (resp.records_len[i] > 0
                                                or offset < self._end_of(resp, i)):
            # records are there but none came (or only part of a batch): the Fetch asked for
            # less than the batch at ``offset`` and the partition was not the first to answer
            self.short_fetch.add((ps.topic, ps.partition))
        if decoded.count:
            ps.eof_reported = False
            nbytes = max(resp.records_len[i], 0)
            return Chunk(ps.app, ps.gen, decoded.segments, decoded.next_offset,
                         decoded.count, nbytes, error=report)
        if decoded.next_offset > offset or report is not None:
            # Only control or aborted batches (move the application position as well), or
            # an error to hand out.
            return Chunk(ps.app, ps.gen, [], decoded.next_offset, 0, 0, error=report)
        end = self._end_of(resp, i)
        if self.eof_enabled and not ps.eof_reported and offset >= end:
            ps.eof_reported = True
            return Chunk(ps.app, ps.gen, [], offset, 0, 0, eof=True)
        return None

    # -- positions -----------------------------------------------------------------------------
    def _resolve(self, parts: list[FetchCursor]) -> None:
        state = self.state
        committed = []
        errors = []
        reset: dict[tuple[str, int], int] = {}
        with state.lock:
            for ps in parts:
                ps.resolving = True
                if ps.need == NEED_COMMITTED and self.group_id:
                    committed.append(ps)
                else:
                    target = ps.reset_to if ps.need == NEED_RESET and ps.reset_to is not None \
                        else self.reset_strategy
                    if target is None:
                        ps.resolving = False
                        ps.backoff_until = time.monotonic() + self.error_backoff
                        if not ps.error_reported:
                            ps.error_reported = True
                            errors.append(KafkaError.of(
                                E._AUTO_OFFSET_RESET,
                                f"{ps.topic} [{ps.partition}]: no committed offset and "
                                f"auto.offset.reset=error", fatal=False))
                        continue
                    reset[(ps.topic, ps.partition)] = target
        for err in errors:
            state.post_error(err)
        if committed:
            versions = {(ps.topic, ps.partition): (ps, ps.version) for ps in committed}
            f = self.offsets.fetch_committed(list(versions), self.request_timeout_ms / 1000)
            f.add_done_callback(lambda f: self._on_committed(versions, f))
        if reset:
            self._list(reset, {tp: state.cursors[tp] for tp in reset})

    def _on_committed(self, versions, f: Future) -> None:
        state = self.state
        exc = f.exception()
        if exc is not None:
            with state.lock:
                for ps, _ in versions.values():
                    ps.resolving = False
                    ps.backoff_until = time.monotonic() + self.error_backoff
            state.post_error(error_of(exc))
            return
        found = f.result()
        starts = []
        with state.lock:
            for tp, (ps, version) in versions.items():
                if ps.version != version:
                    ps.resolving = False
                    continue
                offset, metadata, epoch = found.get(tp, (-1, None, -1))
                if offset >= 0:
                    # A committed epoch is validated against the leader before fetching.
                    epoch = epoch if epoch is not None else -1
                    ps.set_position(offset, epoch)
                    ps.resolving = False
                    starts.append(Chunk(ps.app, ps.gen, [], offset, 0, 0, start=True,
                                        epoch=epoch, committed=offset))
                else:
                    ps.need = NEED_RESET
                    ps.reset_to = None
                    ps.resolving = False
        if starts:
            state.enqueue(starts)
        self.client.wakeup()

    def _list(self, wanted: dict[tuple[str, int], int], parts) -> None:
        state = self.state
        versions = {tp: parts[tp].version for tp in wanted}
        f = self.offsets.list_offsets(
            {tp: (-2 if ts == OFFSET_BEGINNING else -1 if ts == OFFSET_END else ts)
             for tp, ts in wanted.items()},
            self.request_timeout_ms / 1000,
            isolation_level=1 if self.read_committed else 0)

        def done(f: Future) -> None:
            exc = f.exception()
            starts = []
            with state.lock:
                if exc is not None:
                    for tp in wanted:
                        parts[tp].resolving = False
                        parts[tp].backoff_until = time.monotonic() + self.error_backoff
                else:
                    for tp, (offset, _epoch, _) in f.result().items():
                        ps = parts[tp]
                        ps.resolving = False
                        if ps.version != versions[tp]:
                            continue
                        if offset < 0:
                            # A timestamp past the last record: start at the end.
                            ps.need = NEED_RESET
                            ps.reset_to = OFFSET_END
                            continue
                        ps.set_position(offset, -1)
                        starts.append(Chunk(ps.app, ps.gen, [], offset, 0, 0, start=True))
            if starts:
                state.enqueue(starts)
            if exc is not None:
                err = error_of(exc)
                if err.code() not in TRANSIENT_LOCAL:
                    state.post_error(err)
            self.client.wakeup()

        f.add_done_callback(done)
