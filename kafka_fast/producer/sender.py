"""The sender: drains sealed batches into one ProduceRequest per leader, on the I/O thread.

It runs as a poll hook of the client's I/O loop (every iteration), so it never blocks and
never calls user code. Per iteration it:

1. seals batches whose ``linger.ms`` expired and picks up newly sealed ones;
2. applies new metadata (partition counts, records waiting for their topic's metadata);
3. fails batches past ``delivery.timeout.ms`` with ``_MSG_TIMED_OUT``;
4. with idempotence, gets the producer id / bumps the epoch when due;
5. for every leader with room in its in-flight window, sends ONE ProduceRequest holding the
   first ready batch of every partition it leads (more requests while the window allows).

Responses: success completes the batch; retriable errors requeue it in order with exponential
backoff (refreshing metadata for leadership errors); idempotence errors follow KIP-360
(duplicate = success, out-of-order/unknown producer on the first unacknowledged batch = epoch
bump, otherwise retry in order); anything else fails the batch with the broker's code.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from ..errors import KafkaError, KafkaException
from ..net.lanes import PRODUCE_LANES, Lane
from ..stats import BatchRecorder
from .accumulator import Accumulator, PartitionState, TopicState
from .batch import ProducerBatch, RecordEntries
from .delivery import DeliveryQueue
from .idempotence import ProducerIdentity
from .wire import ProduceResults, ProduceWire

#: Errors after which the partition's leader is looked up again.
REFRESH_CODES = frozenset({
    KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.UNKNOWN_TOPIC_OR_PARTITION,
    KafkaError.UNKNOWN_TOPIC_ID, KafkaError.INCONSISTENT_TOPIC_ID,
    KafkaError.LEADER_NOT_AVAILABLE, KafkaError.KAFKA_STORAGE_ERROR,
    KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.NOT_ENOUGH_REPLICAS, KafkaError._TRANSPORT, KafkaError._UNKNOWN_BROKER,
    KafkaError._ALL_BROKERS_DOWN,
})
#: Local failures of a whole request that are worth a retry.
RETRIABLE_LOCAL = frozenset({
    KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._UNKNOWN_BROKER,
    KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT, KafkaError.NETWORK_EXCEPTION,
})
MAX_IDEMPOTENT_IN_FLIGHT = 5
#: The first Produce version that names topics by ID (KIP-516).
TOPIC_ID_VERSION = 13
#: Largest ProduceRequest the sender builds (bytes of record data; one batch always fits).
MAX_REQUEST_BYTES = 16 * 1024 * 1024
EXPIRY_INTERVAL = 0.05
#: How long the sender may sleep while it holds no record and awaits nothing (a record
#: produced meanwhile wakes it: ``RecordAccumulator.open``/``seal``)
IDLE_WAIT = 1.0
#: How long the sender leaves sealing of lingering batches to a producing application thread.
LINGER_GRACE = 0.001
SEQ_MASK = 0x7FFFFFFF

_ERR = KafkaError


#: The last Produce version a transactions-v1 transaction may use (KIP-890).
PRODUCE_TXN_V1_MAX_VERSION = 11

#: The shortest wait for a produce response cut short by message.timeout.ms (librdkafka's).
MIN_WAIT_MS = 100


class Sender:
    """Turns sealed batches into ProduceRequests and responses into delivery reports."""

    def __init__(self, client: Any, config: Any, acc: Accumulator, reports: DeliveryQueue,
                 *, idempotent: bool, acks: int) -> None:
        self.client = client
        self.acc = acc
        self.reports = reports
        self.acks = acks
        self.idempotent = idempotent
        self.request_timeout_ms = config["request.timeout.ms"]
        self.delivery_timeout = config["delivery.timeout.ms"] / 1000.0 or float("inf")
        self.retries = config["retries"]
        self.backoff_base = config["retry.backoff.ms"] / 1000.0
        self.backoff_max = max(self.backoff_base, config["retry.backoff.max.ms"] / 1000.0)
        self.max_in_flight = min(
            config["max.in.flight.requests.per.connection"],
            MAX_IDEMPOTENT_IN_FLIGHT if idempotent else 1 << 30)
        #: a partition's order is kept across retries and leader moves (idempotence, or one
        #: request in flight per connection)
        self.ordered = idempotent or self.max_in_flight == 1
        #: the connections of each broker that Produce requests go over (partition p: p % k)
        self.lanes = PRODUCE_LANES[:config["produce.connections.per.broker"]]
        self.identity = ProducerIdentity(client, config) if idempotent else None
        if self.identity is not None:
            self.identity.on_new_epoch = self._reset_sequences
        #: A transactional producer plugs in here: ``ready(ps) -> bool`` gates sending to a
        #: partition (AddPartitionsToTxn first), ``sending(ps) -> bool`` says so without side
        #: effects, ``batch_failed(batch, err)`` sees failures.
        self.txn_hook: Any = None
        self.transactional = False
        self.queued: dict[PartitionState, None] = {}  # partitions with sealed batches
        self.inflight_requests = 0
        #: Produce requests handed to the client and not answered yet, per broker connection
        #: (node, lane): the connection's own count misses requests submitted but not yet
        #: written.
        self.conn_requests: dict[tuple[int, Lane], int] = {}
        self.completions: deque[tuple] = deque()
        #: Batches of records that failed before being sent (either thread), to report.
        self.failed: deque[ProducerBatch] = deque()
        self.want_metadata: set[str] = set()
        self.view: Any = None
        self.next_expiry = 0.0
        self.next_metadata = 0.0
        self.next_topic_probe = 0.0
        self.next_leader_check = 0.0
        self.linger_grace = LINGER_GRACE
        self.sticky_interval = config["sticky.partitioning.linger.ms"] / 1000.0
        self.next_sticky = 0.0
        self.linger_due_at = 0.0
        self.fatal_error: KafkaError | None = None
        self.closed = False
        #: counts delivered batches for the statistics (one call per batch)
        self.recorder: BatchRecorder | None = None

    # -- the poll hook ---------------------------------------------------------------------
    def run(self) -> float:
        """One pass; the most seconds the loop may sleep before the next one."""
        acc = self.acc
        now = time.monotonic()
        while self.completions:
            self._complete_request(*self.completions.popleft())
        failed = self.failed
        while failed:
            self._report(failed.popleft())
        if now >= acc.next_linger:
            self._linger_due(now)
        ready = acc.ready
        while ready:
            self.queued[ready.popleft()] = None
        view = self.client.cluster
        if view is not self.view:
            self.view = view
            self._apply_metadata(view)
        if now >= self.next_expiry:
            self.next_expiry = now + EXPIRY_INTERVAL
            self._expire(now)
        if self.sticky_interval and now >= self.next_sticky:
            # sticky.partitioning.linger.ms: keyless records move on even if the sticky
            # partition's batch is not full (the int store is atomic for produce()).
            self.next_sticky = now + self.sticky_interval
            for t in list(acc.topics.values()):
                if t.num_partitions > 1:
                    acc.next_sticky(t)
        wait = EXPIRY_INTERVAL
        identity = self.identity
        if identity is not None and not identity.ready:
            if identity.state == "fatal":
                self.set_fatal(identity.fatal_error)
            else:
                identity.maybe_send(now, self.inflight_requests)
        elif self.queued:
            wait = self._drain(now)
        if self.want_metadata and now >= self.next_metadata:
            topics = list(self.want_metadata)
            self.want_metadata.clear()
            self.next_metadata = now + self.backoff_base
            self.client.request_metadata(topics)
        idle = self._idle(acc)
        if idle:
            wait = IDLE_WAIT  # nothing to expire, send or complete
        if acc.linger_due:
            wait = min(wait, self.linger_grace)
        elif acc.next_linger != float("inf"):
            wait = min(wait, max(0.0, acc.next_linger - now))
        acc.io_deadline = now + wait
        if idle and not self._idle(acc):
            # a batch opened while this pass looked: it compared its linger deadline with the
            # earlier io_deadline and may not have woken this thread, so look again at once
            wait = 0.0
        return wait

    def _idle(self, acc: Accumulator) -> bool:
        """No record held (queued, open, in flight or unreported), no request out, no
        producer id or metadata to fetch."""
        identity = self.identity
        return (acc.count == 0 and not acc.open_parts and not self.queued
                and not self.inflight_requests and not self.completions and not self.failed
                and not self.want_metadata and (identity is None or identity.ready))

    def _linger_due(self, now: float) -> None:
        """Batches passed ``linger.ms``. A producing application thread seals them itself on
        its next ``produce()`` (no lock hand-over between threads); when it does not within
        ``linger_grace``, this thread seals them."""
        acc = self.acc
        if not acc.linger_due:
            acc.linger_due = True
            self.linger_due_at = now
            return
        if now - self.linger_due_at >= self.linger_grace and acc.lock.acquire(False):
            # The application is idle (or busy elsewhere): seal them here. Never block on the
            # lock: its holder may be waiting for the interpreter lock this thread holds.
            try:
                acc.seal_lingering(now)
            finally:
                acc.lock.release()

    # -- metadata --------------------------------------------------------------------------
    def _apply_metadata(self, view: Any) -> None:
        acc = self.acc
        for name, t in list(acc.topics.items()):
            info = view.topics.get(name)
            if has_partitions(info):
                with acc.lock:
                    self.learn_topic(t, info)
            elif t.pending and info is not None and info.error is not None \
                    and not info.error.retriable():
                # A final answer (authorization, invalid name): waiting longer cannot help.
                with acc.lock:
                    waiting, t.pending = t.pending, []
                err = info.error
                self._fail_waiting(t.name, waiting, KafkaError.of(
                    err.code(), f"{err.str()} (topic {name!r})"))

    def learn_topic(self, t: TopicState, info: Any) -> bool:
        """Take ``t``'s partitions from its metadata ``info`` (lock held; either thread) and
        place the records produce() left waiting for them, so that they come before any
        record added once the partitions are known. False if ``info`` has no partitions."""
        if not has_partitions(info):
            return False
        available = sorted(p for p, pi in info.partitions.items() if pi.leader >= 0)
        self.acc.set_partitions(t, max(info.partitions) + 1, available)
        if t.pending:
            self._assign_pending(t)
        return True

    def _assign_pending(self, t: TopicState) -> None:
        """Records produced before the topic's metadata arrived, in order (lock held)."""
        acc = self.acc
        pending, t.pending = t.pending, []
        for value, key, partition, ts, headers, cb, _created in pending:
            if partition >= t.num_partitions or partition < -1:
                self._fail_records(t.name, partition, [(cb, key, value, headers, ts)],
                                   KafkaError.of(KafkaError._UNKNOWN_PARTITION,
                                              f"{t.name} has no partition {partition}"))
                continue
            if partition < 0:
                partition = acc.partitioner(key, t)
            ps = t.parts[partition]
            try:
                acc.append(ps, value, key, ts, headers, cb)
            except KafkaException as exc:
                self._fail_records(t.name, partition, [(cb, key, value, headers, ts)],
                                   exc.args[0], ps)
            except Exception as exc:  # one bad record must not lose the rest
                self._fail_records(t.name, partition, [(cb, key, value, headers, ts)],
                                   KafkaError.of(KafkaError._INVALID_ARG,
                                              f"record cannot be encoded: {exc}"), ps)

    # -- expiry ----------------------------------------------------------------------------
    def _expire(self, now: float) -> None:
        timeout = self.delivery_timeout
        acc = self.acc
        if timeout != float("inf"):
            for ps in list(self.queued):
                sealed = ps.sealed
                if sealed and now - sealed[0].created > timeout:
                    why = self._held_reason(ps, now)
                    while sealed and now - sealed[0].created > timeout:
                        self._expired(sealed.popleft(), why)
        probe = now >= self.next_topic_probe
        for t in list(acc.topics.values()):
            if not t.pending:
                continue
            if now - t.pending[0][6] > timeout:
                with acc.lock:
                    keep = [r for r in t.pending if now - r[6] <= timeout]
                    gone = [r for r in t.pending if now - r[6] > timeout]
                    t.pending = keep
                if gone:
                    self._fail_waiting(t.name, gone, KafkaError.of(
                        KafkaError._MSG_TIMED_OUT,
                        f"Local: Message timed out (no metadata for {t.name})"))
            if t.pending and probe:
                if not has_partitions(self.view.topics.get(t.name)):
                    # Unknown or in error (not created yet, leader election): ask again.
                    self.want_metadata.add(t.name)
        if probe:
            self.next_topic_probe = now + self.backoff_max

    def _bump(self) -> None:
        """Ask for a new producer epoch: some sequence numbers will never be acknowledged."""
        if self.identity is not None:
            self.identity.request_bump()

    def _expired(self, batch: ProducerBatch, why: str) -> None:
        if self.idempotent and batch.base_sequence >= 0:
            self._bump()  # its sequence numbers will never be acknowledged
        last = batch.last_error
        tried = f"; last error: {last.str()}" if last is not None else ""
        self._finish(batch, KafkaError.of(KafkaError._MSG_TIMED_OUT, (
            f"Local: Message timed out ({batch.count} record(s) of {batch.part.topic} "
            f"[{batch.part.partition}] waited {self.delivery_timeout:g} s: {why}{tried})")))

    def _awaits_previous_leader(self, ps: PartitionState, leader: int) -> bool:
        """The leader moved while batches of ``ps`` were in flight to the previous one: an
        ordered producer waits for those answers, or a later batch could be written before
        an earlier one the previous leader refuses."""
        return self.ordered and bool(ps.inflight) and ps.inflight_node != leader

    def _held_reason(self, ps: PartitionState, now: float) -> str:
        """Why the head batch of ``ps`` is not on its way to the broker (for the message of a
        time-out): what ``_sendable`` and ``_drain`` wait for."""
        head = ps.sealed[0]
        if self.idempotent and ps.inflight and (
                ps.resync or ps.acked_seq == 0 or len(ps.inflight) >= MAX_IDEMPOTENT_IN_FLIGHT):
            return (f"{len(ps.inflight)} earlier batch(es) of the partition still awaited "
                    f"an answer (idempotent order)")
        if head.retry_at > now or ps.backoff_until > now:
            return "it was backing off before a retry"
        if not head.encoded():
            return "it was still being compressed"
        hook = self.txn_hook
        if hook is not None and not hook.sending(ps):
            return "the transaction was not ready to send to the partition"
        client = self.client
        leader = client.cluster.leader(ps.topic, ps.partition)
        if leader is None:
            return "no leader was known for the partition"
        if self._awaits_previous_leader(ps, leader):
            return (f"{len(ps.inflight)} earlier batch(es) of the partition still awaited "
                    f"an answer from its previous leader, broker {ps.inflight_node}")
        brokers = client.cluster.brokers
        if not brokers:
            return (f"no broker was known (every broker had been unreachable: the client went "
                    f"back to bootstrap.servers; its leader was broker {leader})")
        if leader not in brokers:
            return f"its leader, broker {leader}, was missing from the metadata"
        lane = self.lanes[ps.partition % len(self.lanes)]
        state = client.connection_state(leader, lane)
        if state != "READY":
            return f"no connection to its leader, broker {leader} ({state})"
        return (f"the connection to its leader, broker {leader}, had no room "
                f"({self.conn_requests.get((leader, lane), 0)} produce requests awaited)")

    # -- draining --------------------------------------------------------------------------
    def _sendable(self, ps: PartitionState, now: float) -> bool:
        sealed = ps.sealed
        if not sealed or sealed[0].retry_at > now or ps.backoff_until > now:
            return False
        if not sealed[0].encoded():
            return False  # an encoder thread wakes the I/O thread when it is done
        if self.idempotent:
            if ps.resync:
                if ps.inflight:
                    return False
                if sealed[0].base_sequence < 0:
                    ps.resync = False
            if ps.inflight and ps.acked_seq == 0:
                # Nothing acknowledged yet in this epoch: a first batch refused with a
                # retriable error (a new partition not ready on its leader) would be overtaken
                # by the batches behind it, which a broker without state for the producer
                # takes, and could never be written after them. One in flight until then.
                return False
            if len(ps.inflight) >= MAX_IDEMPOTENT_IN_FLIGHT:
                return False
        hook = self.txn_hook
        return hook is None or hook.ready(ps)

    def _drain(self, now: float) -> float:
        by_node: dict[tuple[int, Lane], list[PartitionState]] = {}
        lanes = self.lanes
        width = len(lanes)
        wait = EXPIRY_INTERVAL
        client = self.client
        for ps in list(self.queued):
            if not ps.sealed:
                del self.queued[ps]
                continue
            if not self._sendable(ps, now):
                head_at = ps.sealed[0].retry_at if ps.sealed else 0.0
                if head_at > now:
                    wait = min(wait, head_at - now)
                continue
            leader = client.leader(ps.topic, ps.partition)
            if leader is None:
                self.want_metadata.add(ps.topic)
                continue
            if self._awaits_previous_leader(ps, leader):
                continue
            by_node.setdefault((leader, lanes[ps.partition % width]), []).append(ps)
        brokers = client.cluster.brokers
        unreachable: set[str] = set()
        for conn, parts in by_node.items():
            node, lane = conn
            if node not in brokers:
                # The leader is missing from the latest metadata (down when it was taken):
                # look again until its address is known.
                self.want_metadata.update(ps.topic for ps in parts)
                continue
            conn_requests = self.conn_requests
            while (parts and conn_requests.get(conn, 0) < self.max_in_flight
                   and client.node_ready(node, lane)):
                parts = self._send_one(conn, parts, now)
            if parts and client.node_unreachable(node, lane):
                unreachable.update(ps.topic for ps in parts)
        if unreachable and now >= self.next_leader_check:
            # A leader cannot be reached: its leadership may have moved elsewhere.
            self.next_leader_check = now + self.backoff_max
            self.want_metadata.update(unreachable)
        return wait

    def _send_one(self, conn: tuple[int, Lane], parts: list[PartitionState], now: float
                  ) -> list[PartitionState]:
        """Send one request on broker connection ``conn`` (node, lane) with the head batch of
        each of ``parts``; the partitions that still have sendable batches."""
        identity = self.identity
        pid = identity.producer_id if identity is not None else -1
        epoch = identity.epoch if identity is not None else -1
        topics: dict[str, list[tuple[int, Any]]] = {}
        batches: list[ProducerBatch] = []
        total = 0
        rest: list[PartitionState] = []
        known = self.view.topics
        ids: dict[str, Any] = {}
        for i, ps in enumerate(parts):
            if total and total >= MAX_REQUEST_BYTES:
                rest.extend(p for p in parts[i:] if self._sendable(p, now))
                break
            if not ps.sealed:
                continue
            batch = ps.sealed.popleft()  # the application thread only appends on the right
            info = known.get(ps.topic)
            topic_id = info.topic_id if info is not None else None
            if batch.topic_id is None:
                batch.topic_id = topic_id
            elif topic_id is not None and topic_id != batch.topic_id:
                # Sent to a topic that was deleted and created again since: never written
                # into the new one (its records may already be in the old one).
                self._handle_error(batch, KafkaError.of(
                    KafkaError.UNKNOWN_TOPIC_ID,
                    f"{ps.topic} was deleted and created again (topic id {batch.topic_id} "
                    f"is now {topic_id}) while this batch was being sent", retriable=False),
                    now)
                if self._sendable(ps, now):
                    rest.append(ps)
                continue
            ids[ps.topic] = topic_id
            if self.idempotent and batch.base_sequence < 0:
                batch.base_sequence = ps.next_seq
                ps.next_seq = (ps.next_seq + batch.count) & SEQ_MASK
            ps.inflight.append(batch)
            ps.inflight_node = conn[0]
            try:
                payload = batch.wire_bytes(pid, epoch, self.transactional)
            except Exception as exc:  # the encoder failed: this batch can never be sent
                self._handle_error(batch, KafkaError.of(
                    KafkaError._FAIL, f"batch cannot be encoded: {exc!r}", retriable=False),
                    now)
                if self._sendable(ps, now):
                    rest.append(ps)
                continue
            total += len(payload)
            batch.sent_at = now
            topics.setdefault(ps.topic, []).append((ps.partition, payload))
            batches.append(batch)
            if self._sendable(ps, now):
                rest.append(ps)
        if not batches:
            return rest
        if len(topics) > 1:
            # in the request's order (grouped by topic), which the response follows
            place = {t: i for i, t in enumerate(topics)}
            batches.sort(key=lambda b: place[b.part.topic])
        txn_id = identity.transactional_id if identity is not None else None
        # Produce v13 names topics by ID: only when metadata gave every topic one.
        highest = None if all(v is not None for v in ids.values()) else TOPIC_ID_VERSION - 1
        hook = self.txn_hook
        if hook is not None and hook.transaction_version < 2:
            # Produce v12+ would add the partition to a transactions-v2 transaction (KIP-890);
            # a v1 transaction must stay below it.
            highest = PRODUCE_TXN_V1_MAX_VERSION
        message = ProduceWire(txn_id, self.acks, self.request_timeout_ms, topics, ids,
                              max_version=highest)
        self.inflight_requests += 1
        self.conn_requests[conn] = self.conn_requests.get(conn, 0) + 1
        try:
            fut = self.client.send(conn[0], message, timeout_ms=self._wait_ms(batches, now),
                                   lane=conn[1])
        except KafkaException as exc:
            self.inflight_requests -= 1
            self.conn_requests[conn] -= 1
            self._request_failed(batches, exc.args[0], time.monotonic())
            return []
        fut.add_done_callback(lambda f: self._on_done(f, conn, batches))
        return rest

    def _on_done(self, fut: Any, conn: tuple[int, Lane], batches: list[ProducerBatch]) -> None:
        # Resolved on the I/O thread; handled at the start of the next pass.
        self.completions.append((fut, conn, batches))
        self.client.wakeup()

    def _wait_ms(self, batches: list[ProducerBatch], now: float) -> int | None:
        """How long to wait for a produce response when the first batch's
        ``message.timeout.ms`` ends before ``request.timeout.ms`` (as librdkafka does: records
        in flight to a broker that stopped answering fail on time; an idempotent producer
        then takes a new producer id, ``_retry``); None for the request timeout."""
        if self.delivery_timeout == float("inf"):
            return None
        left_ms = (min(b.created for b in batches) + self.delivery_timeout - now) * 1000.0
        if left_ms >= self.request_timeout_ms:
            return None
        return max(MIN_WAIT_MS, int(left_ms) + 1)

    # -- responses -------------------------------------------------------------------------
    def _complete_request(self, fut: Any, conn: tuple[int, Lane],
                          batches: list[ProducerBatch]) -> None:
        self.inflight_requests -= 1
        self.conn_requests[conn] -= 1
        now = time.monotonic()
        exc = fut.exception()
        if exc is not None:
            err = exc.args[0] if isinstance(exc, KafkaException) else KafkaError.of(
                KafkaError._FAIL, str(exc))
            for batch in batches:
                batch.in_doubt = True  # sent, no answer: it may have been written
            self._request_failed(batches, err, now)
            return
        resp = fut.result()
        done: list[ProducerBatch] = []  # reports of this response, queued in one go
        if resp is None:  # acks=0: written is all we learn
            for batch in batches:
                self._done_ok(batch, -1, -1, done)
        elif resp.__class__ is ProduceResults:
            self._complete_columns(resp, getattr(fut, "api_version", 0) >= TOPIC_ID_VERSION,
                                   batches, now, done)
        else:
            self._complete_decoded(resp, getattr(fut, "api_version", 0) >= TOPIC_ID_VERSION,
                                   batches, now, done)
        if done:
            self.reports.put_many(done)

    def _complete_columns(self, res: ProduceResults, by_id: bool,
                          batches: list[ProducerBatch], now: float,
                          done: list[ProducerBatch]) -> None:
        """Every partition of the response succeeded (``ProduceResults``): rows in the
        request's order are matched by position, others by topic and partition."""
        topics = res.topics
        if by_id:
            names = {b.topic_id.bytes: b.part.topic for b in batches if b.topic_id is not None}
            topics = [names.get(t) for t in topics]
        topic_index, partition = res.topic_index, res.partition
        base_offset, append_time = res.base_offset, res.log_append_time
        n = len(partition)
        rows: dict[tuple[Any, int], int] | None = None
        for i, batch in enumerate(batches):
            ps = batch.part
            if i < n and partition[i] == ps.partition and topics[topic_index[i]] == ps.topic:
                row = i
            else:
                if rows is None:
                    rows = {(topics[topic_index[j]], partition[j]): j for j in range(n)}
                found = rows.get((ps.topic, ps.partition))
                if found is None:
                    self._handle_error(batch, KafkaError.of(
                        KafkaError._BAD_MSG, "partition missing from the produce response",
                        retriable=True), now)
                    continue
                row = found
            self._done_ok(batch, base_offset[row], append_time[row], done)

    def _complete_decoded(self, resp: Any, by_id: bool, batches: list[ProducerBatch],
                          now: float, done: list[ProducerBatch]) -> None:
        """A response the generated decoder read (a partition failed, or it carries what the
        columns do not)."""
        results: dict[tuple[str | None, int], Any] = {}
        if by_id:
            names = {b.topic_id: b.part.topic for b in batches}
            for t in resp.responses:
                name = names.get(t.topic_id)
                for p in t.partition_responses:
                    results[(name, p.index)] = p
        else:
            for t in resp.responses:
                for p in t.partition_responses:
                    results[(t.name, p.index)] = p
        for batch in batches:
            pr = results.get((batch.part.topic, batch.part.partition))
            if pr is None:
                self._handle_error(batch, KafkaError.of(
                    KafkaError._BAD_MSG, "partition missing from the produce response",
                    retriable=True), now)
                continue
            code = pr.error_code
            if code == 0:
                self._done_ok(batch, pr.base_offset, pr.log_append_time_ms, done)
            else:
                self._handle_error(batch, KafkaError.of(code, _reason(code, pr)), now)

    def _request_failed(self, batches: list[ProducerBatch], err: KafkaError, now: float) -> None:
        for batch in batches:
            self._handle_error(batch, err, now)

    def _done_ok(self, batch: ProducerBatch, base_offset: int, log_append_time: int,
                 done: list[ProducerBatch] | None = None) -> None:
        """``batch`` was written; its report goes to ``done`` when given (queued by the
        caller with the others of its response), else to the queue at once."""
        ps = batch.part
        _discard(ps.inflight, batch)
        if batch.reported:
            return  # purged while in flight: its answer changes nothing
        if self.idempotent:
            end = (batch.base_sequence + batch.count) & SEQ_MASK
            if _seq_after(end, ps.acked_seq):
                ps.acked_seq = end
        batch.base_offset = base_offset
        batch.log_append_time = log_append_time if log_append_time is not None else -1
        recorder = self.recorder
        if recorder is not None:
            payload = batch.payload
            recorder.batch_delivered(ps.topic, ps.partition, batch.count, batch.size,
                                     len(payload) if payload is not None else batch.size)
        self._report(batch, done)

    def _handle_error(self, batch: ProducerBatch, err: KafkaError, now: float) -> None:
        ps = batch.part
        _discard(ps.inflight, batch)
        if batch.reported:
            return  # purged while in flight: never sent again
        code = err.code()
        if self.idempotent:
            identity = self.identity
            assert identity is not None
            stale = batch.stamp[1] != identity.epoch or batch.stamp[0] != identity.producer_id
            if code == KafkaError.DUPLICATE_SEQUENCE_NUMBER:
                self._done_ok(batch, -1, -1)
                return
            if code in (KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, KafkaError.UNKNOWN_PRODUCER_ID):
                if not stale and batch.base_sequence == ps.acked_seq:
                    # The broker lost our state for the first unacknowledged batch: new epoch.
                    self._bump()
                self._retry(batch, err, now, count_attempt=False)
                return
            if code == KafkaError.INVALID_PRODUCER_EPOCH and stale:
                self._retry(batch, err, now, count_attempt=False)
                return
            if code in (KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED,
                        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                        KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                self.set_fatal(KafkaError.of(code, err.str(), fatal=True))
                self._finish(batch, KafkaError.of(code, err.str(), fatal=True))
                return
        if code == KafkaError.UNKNOWN_TOPIC_ID and not batch.in_doubt:
            # Not written anywhere: the retry goes to the topic metadata names next.
            batch.topic_id = None
        retriable = err.retriable() or code in RETRIABLE_LOCAL
        if retriable and batch.attempts < self.retries:
            if code in REFRESH_CODES:
                self.want_metadata.add(ps.topic)
            self._retry(batch, err, now)
            return
        if self.idempotent and batch.base_sequence >= 0:
            self._bump()  # a gap in this partition's sequences
        self._finish(batch, err)

    def _retry(self, batch: ProducerBatch, err: KafkaError, now: float,
               count_attempt: bool = True) -> None:
        batch.last_error = err
        if now - batch.created > self.delivery_timeout:
            self._expired(batch, "its last attempt failed")
            return
        if count_attempt:
            batch.attempts += 1
            delay = min(self.backoff_max, self.backoff_base * (2 ** min(batch.attempts - 1, 30)))
        else:
            delay = 0.0 if err.code() != KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER else \
                self.backoff_base / 4
        batch.retry_at = now + delay
        ps = batch.part
        if self.idempotent:
            ps.resync = True
        self._requeue(batch)

    def _requeue(self, batch: ProducerBatch) -> None:
        """Put a batch back in its partition's queue at its original place."""
        ps = batch.part
        sealed = ps.sealed
        # Concurrent appends by the application thread land on the right, after index i.
        i = 0
        n = len(sealed)
        while i < n and sealed[i].order < batch.order:
            i += 1
        sealed.insert(i, batch)
        self.queued[ps] = None

    def _reset_sequences(self) -> None:
        """New producer epoch: every partition's sequences restart at 0."""
        acc = self.acc
        with acc.lock:
            for t in acc.topics.values():
                for ps in t.parts:
                    ps.next_seq = 0
                    ps.acked_seq = 0
                    ps.resync = False
                    for batch in ps.sealed:
                        batch.base_sequence = -1
                    ps.inflight.clear()

    # -- completion ------------------------------------------------------------------------
    def _finish(self, batch: ProducerBatch, err: KafkaError) -> None:
        batch.error = err
        if self.txn_hook is not None:
            self.txn_hook.batch_failed(batch, err)
        self._report(batch)

    def _report(self, batch: ProducerBatch, done: list[ProducerBatch] | None = None) -> None:
        """Queue ``batch``'s report once its outcome is final, in its partition's production
        order: a batch that finishes before an earlier one of the partition (an answer from a
        new leader before the old leader's, a retry found to be a duplicate) waits for it.
        With ``done``, the reports go there for the caller to queue in one go."""
        if batch.reported:
            return
        batch.reported = True
        batch.payload = None  # its outcome is final: the encoded bytes are not needed again
        ps = batch.part
        order = batch.order
        if order != ps.reported_upto + 1:
            if ps.held is None:
                ps.held = {}
            ps.held[order] = batch
            return
        put = self.reports.put if done is None else done.append
        put(batch)
        held = ps.held
        while held:
            nxt = held.pop(order + 1, None)
            if nxt is None:
                break
            put(nxt)
            order += 1
        ps.reported_upto = order

    def _fail_records(self, topic: str, partition: int, items: list, err: KafkaError,
                      ps: PartitionState | None = None) -> None:
        """Report records that never reached a batch (lock may be held). With ``ps`` (their
        partition's state, lock held) the report comes after those of the records before them."""
        entries = RecordEntries()
        for item in items:
            entries.add(*item)
        if ps is None:
            batch = ProducerBatch(PartitionState(topic, partition), len(items), 0,
                                  time.monotonic(), entries)
        else:
            self.acc.seal(ps)  # the records before them go first
            ps.order += 1
            batch = ProducerBatch(ps, len(items), 0, time.monotonic(), entries, order=ps.order)
        batch.error = err
        if self.txn_hook is not None:  # a record of the open transaction is lost
            self.txn_hook.batch_failed(batch, err)
        if ps is None:
            self.reports.put(batch)
        else:  # reported in order by the I/O thread, which owns the partition's report order
            self.failed.append(batch)
            self.client.wakeup()

    def _fail_waiting(self, topic: str, waiting: list[tuple], err: KafkaError) -> None:
        """Report records that waited for ``topic``'s metadata (``TopicState.pending``), each
        with the partition it was given (-1 when the partitioner was to choose)."""
        by_partition: dict[int, list] = {}
        for value, key, partition, ts, headers, cb, _c in waiting:
            by_partition.setdefault(partition, []).append((cb, key, value, headers, ts))
        for partition, items in by_partition.items():
            self._fail_records(topic, partition, items, err)

    def set_fatal(self, err: KafkaError | None) -> None:
        """Stop for good on ``err`` (I/O thread): queued records fail, produce() raises it."""
        if self.fatal_error is not None or err is None:
            return
        self.fatal_error = err
        self.acc.count_limit = 0  # produce() now raises the fatal error
        self.client.events.error(err)
        self.fail_all(err, in_flight=False)

    # -- purge / shutdown --------------------------------------------------------------------
    def fail_all(self, err: KafkaError, *, in_flight: bool, inflight_err: KafkaError | None = None
                 ) -> None:
        """Fail every queued batch with ``err`` (and in-flight ones if asked): I/O thread."""
        acc = self.acc
        with acc.lock:
            acc.seal_all()
            while acc.ready:
                self.queued[acc.ready.popleft()] = None
            queued: list[ProducerBatch] = []
            for t in acc.topics.values():
                for ps in t.parts:
                    queued.extend(ps.sealed)
                    ps.sealed.clear()
                if t.pending:
                    pending, t.pending = t.pending, []
                    self._fail_waiting(t.name, pending, err)
        reseq = False
        for batch in queued:
            reseq = reseq or batch.base_sequence >= 0
            self._finish(batch, err)
        if in_flight:
            for t in list(acc.topics.values()):
                for ps in t.parts:
                    for batch in list(ps.inflight):
                        reseq = True
                        self._finish(batch, inflight_err or err)
                    ps.inflight.clear()
        if reseq and self.idempotent:
            self._bump()


    def fail_inflight(self, err: KafkaError) -> None:
        """Report every in-flight batch as failed now (their responses are ignored)."""
        for t in list(self.acc.topics.values()):
            for ps in t.parts:
                for batch in list(ps.inflight):
                    self._finish(batch, err)
                ps.inflight.clear()
        if self.idempotent:
            self._bump()


def has_partitions(info: Any) -> bool:
    """True if a topic's metadata (TopicInfo or None) is free of errors and has partitions."""
    return info is not None and info.error is None and bool(info.partitions)


def _reason(code: int, pr: Any) -> str | None:
    msg = getattr(pr, "error_message", None)
    if msg:
        return f"{KafkaError.of(code).str()}: {msg}"
    return None


def _discard(items: list, batch: ProducerBatch) -> None:
    try:
        items.remove(batch)
    except ValueError:
        pass


def _seq_after(a: int, b: int) -> bool:
    """True if sequence ``a`` is after ``b`` (31-bit wrapping)."""
    return a != b and ((a - b) & SEQ_MASK) < (1 << 30)
