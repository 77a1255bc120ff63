"""The record accumulator: one open native batch per partition, sealed batches per partition,
and the bounds on what the producer holds.

Threads: the application thread appends to open builders under ``lock`` (one uncontended lock
per ``produce()``); sealing (full batch, ``linger.ms``, flush) moves a builder into a
:class:`ProducerBatch` on the partition's ``sealed`` deque under the same lock. The I/O thread
never appends: it takes sealed batches with single deque operations (atomic, no lock), and
when batches passed ``linger.ms`` it first asks a producing application thread to seal them
(``linger_due``), taking the lock itself only if the application is idle. So the two threads
hardly ever meet on the lock, which would cost an interpreter-lock hand-over each time.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..errors import KafkaError, KafkaException
from ..records import RecordBatchBuilder
from ..stats import ProducerQueues
from .batch import ProducerBatch, RecordEntries
from .partitioner import partition_key
from .routing import PartitionRoute, RouteLock, RouterState, TopicRoute

_NOW_MS = time.time
#: How soon a lingering batch held open behind a waiting sealed one is looked at again.
RECHECK_S = 0.005
#: A sealed batch wakes the I/O thread only if it would otherwise sleep longer than this.
WAKE_SLACK = 0.001


def now_ms() -> int:
    return int(_NOW_MS() * 1000)


class PartitionState(PartitionRoute):
    """Everything the producer keeps for one topic-partition (``fast`` and ``entries`` are
    in the base)."""

    __slots__ = (
        "topic", "partition", "builder", "opened", "sealed", "inflight",
        "next_seq", "acked_seq", "resync", "backoff_until", "order", "pending_ready",
        "reported_upto", "held", "inflight_node",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.builder: Any = None  # open RecordBatchBuilder (application thread, under lock)
        #: ``builder`` when produce()'s fast path may append to it (no per-record size
        #: check needed), else None.
        self.fast: Any = None
        self.opened = 0.0  # monotonic time of the open builder's first record
        self.entries: RecordEntries | None = None  # delivery data of the open builder
        self.sealed: deque[ProducerBatch] = deque()  # in order; retries go back in front
        # The rest belongs to the I/O thread.
        self.inflight: list[ProducerBatch] = []
        self.inflight_node = -1  # the broker ``inflight`` was sent to
        self.next_seq = 0  # next sequence number to assign (idempotence)
        self.acked_seq = 0  # sequence following the last acknowledged batch
        self.resync = False  # a batch is being retried: one request in flight at a time
        self.backoff_until = 0.0
        self.order = 0  # batches created so far (keeps retried batches in place)
        self.pending_ready = False
        #: Reports are served in ``order``: every batch up to this one has been reported;
        #: ``held`` keeps finished batches (by order) until those before them finish.
        self.reported_upto = 0
        self.held: dict[int, ProducerBatch] | None = None

    def __repr__(self) -> str:
        return f"PartitionState({self.topic}[{self.partition}])"


class TopicState(TopicRoute):
    """Partitions of one topic, its sticky partition, and records waiting for metadata
    (``parts``, ``num_partitions`` and ``sticky`` are in the base)."""

    __slots__ = ("name", "available", "pending", "first_pending")

    def __init__(self, name: str) -> None:
        self.name = name
        self.parts: list[PartitionState] = []
        self.num_partitions = 0  # 0 until metadata tells
        self.sticky = 0
        self.available: list[int] = []  # partitions with a known leader
        # Records produced before the topic's metadata was known:
        # (value, key, partition, timestamp_ms, headers, callback, monotonic time)
        self.pending: list[tuple] = []
        self.first_pending = 0.0


class Accumulator(RouterState):
    """Open builders, sealed batches and the producer's record/byte budget (the counters
    produce() checks per record are in the base)."""

    def __init__(self, config: Any, algorithm: int) -> None:
        self.lock = RouteLock()
        self.topics: dict[str, TopicState] = {}
        self.algorithm = algorithm
        self.count = 0  # records not yet reported to the application
        self.bytes = 0  # payload bytes of sealed batches not yet reported
        self.max_count = config["queue.buffering.max.messages"] or (1 << 62)
        self.max_bytes = config["queue.buffering.max.kbytes"] * 1024
        #: ``max_count`` while records may be added, 0 when the byte budget is used up or the
        #: producer closed/failed: produce() compares ``count`` with this one number.
        self.count_limit = self.max_count
        self.max_message = config["message.max.bytes"]
        self.batch_size = config["batch.size"]
        self.batch_records = config["batch.num.messages"]
        self.linger = config["linger.ms"] / 1000.0
        self.compression = config["compression.type"]
        level = config["compression.level"]
        self.compression_level = None if level < 0 else level
        #: Records above ``batch.size`` may still be below ``message.max.bytes``: only when
        #: the builder's bound is looser than message.max.bytes must every record be sized.
        self.size_every_record = self.batch_size > self.max_message
        #: Builds a sealed batch's payload elsewhere (compressed batches go to encoder
        #: threads, so compression stays off the I/O thread); None: built when sent.
        self.encode: Callable[[Any], Future] | None = None
        self.ready: deque[PartitionState] = deque()  # partitions that got sealed batches
        #: Partitions with an open builder, in the order they were opened (so by ``opened``).
        self.open_parts: OrderedDict[PartitionState, None] = OrderedDict()
        self.next_linger = float("inf")
        #: Set under the lock when the I/O thread should look at the queues soon; the
        #: application thread wakes it after releasing the lock (never a syscall inside it).
        self.wake = False
        #: Set by the I/O thread when open batches passed linger.ms (see Sender._linger_due).
        self.linger_due = False
        #: When the I/O thread will look at the queues next without being woken (monotonic).
        self.io_deadline = 0.0
        #: flush() calls in progress: while any runs, batches opened meanwhile (records placed
        #: when their topic's metadata arrives, produce() from other threads) do not linger.
        self.flushing = 0
        self.closed = False

    # -- application thread (lock held) ------------------------------------------------------
    def check_budget(self) -> None:
        """BufferError when the producer holds as many records/bytes as allowed."""
        if self.count >= self.max_count:
            raise BufferError(
                f"Local: Queue full ({self.count} records held, "
                f"queue.buffering.max.messages={self.max_count})")
        if self.bytes >= self.max_bytes:
            raise BufferError(
                f"Local: Queue full ({self.bytes} bytes held, "
                f"queue.buffering.max.kbytes={self.max_bytes // 1024})")

    def refresh_limit(self, open_: bool = True) -> None:
        """Recompute ``count_limit`` after the byte count or the producer's state changed."""
        self.count_limit = self.max_count if open_ and self.bytes < self.max_bytes else 0

    def record_size(self, value: Any, key: Any, headers: Any) -> int:
        size = (0 if value is None else len(value)) + (0 if key is None else len(key))
        if headers:
            for name, hv in headers:
                size += len(name) + (0 if hv is None else len(hv))
        return size

    def check_size(self, value: Any, key: Any, headers: Any) -> None:
        size = self.record_size(value, key, headers)
        if size > self.max_message:
            raise KafkaException(KafkaError.of(
                KafkaError.MSG_SIZE_TOO_LARGE,
                f"Broker: Message size too large: record of {size} bytes exceeds "
                f"message.max.bytes={self.max_message}"))

    def append(self, ps: PartitionState, value: Any, key: Any, timestamp: int, headers: Any,
               callback: Any) -> None:
        """Add one record to ``ps``'s open batch, sealing/opening batches as needed."""
        if callback is not None and not timestamp:
            timestamp = now_ms()
        if self.size_every_record:
            self.check_size(value, key, headers)
        b = ps.builder
        if b is None or len(b) >= self.batch_records or not b.append(
                value, key, timestamp or None, headers):
            if not self.size_every_record:
                self.check_size(value, key, headers)
            if b is not None:
                self.seal(ps)
            b = self.open(ps)
            b.append(value, key, timestamp or None, headers)
        entries = ps.entries
        if callback is not None:
            if entries is None:
                entries = ps.entries = RecordEntries(len(b) - 1)
            entries.items += (callback, key, value, headers, timestamp)
        elif entries is not None:
            entries.items += RecordEntries.EMPTY

    def open(self, ps: PartitionState) -> Any:
        b = ps.builder = RecordBatchBuilder(
            compression=self.compression, batch_size=self.batch_size,
            compression_level=self.compression_level)
        ps.fast = None if self.size_every_record else b
        now = time.monotonic()
        ps.opened = now
        self.open_parts[ps] = None
        deadline = now if self.flushing else now + self.linger
        if deadline < self.next_linger:
            self.next_linger = deadline
            if deadline < self.io_deadline:
                self.wake = True  # the I/O thread sleeps past this batch's linger deadline
        return b

    def seal(self, ps: PartitionState) -> ProducerBatch | None:
        """Move ``ps``'s open builder to its sealed queue (lock held)."""
        b = ps.builder
        if b is None:
            return None
        ps.fast = None
        ps.builder = None
        self.open_parts.pop(ps, None)
        count = len(b)
        if count == 0:
            ps.entries = None
            return None
        size = b.size_in_bytes
        ps.order += 1
        batch = ProducerBatch(ps, count, size, ps.opened, ps.entries, builder=b, order=ps.order)
        if self.encode is not None:
            batch.encoding = self.encode(b)
        ps.entries = None
        self.bytes += size
        if self.bytes >= self.max_bytes:
            self.count_limit = 0
        ps.sealed.append(batch)
        self.ready.append(ps)
        topic = self.topics.get(ps.topic)
        if topic is not None and topic.sticky == ps.partition:
            self.next_sticky(topic)
        if self.io_deadline > time.monotonic() + WAKE_SLACK:
            self.wake = True  # the I/O thread would not look at the queues soon enough
        return batch

    def add_sealed(self, ps: PartitionState, batch: ProducerBatch) -> None:
        """Queue an already encoded batch (``produce_batch``) after ``ps``'s open one."""
        if ps.builder is not None:
            self.seal(ps)
        ps.order += 1
        batch.order = ps.order
        self.bytes += batch.size
        if self.bytes >= self.max_bytes:
            self.count_limit = 0
        ps.sealed.append(batch)
        self.ready.append(ps)

    def partitioner(self, key: Any, topic: TopicState) -> int:
        """The partition for ``key`` (the sticky one when the partitioner leaves it open)."""
        p = partition_key(key, topic.num_partitions, self.algorithm)
        return topic.sticky if p < 0 else p

    def next_sticky(self, topic: TopicState) -> None:
        """Pick a new sticky partition for records without a key (KIP-480)."""
        choices = topic.available or range(topic.num_partitions)
        if len(choices) > 1:
            current = topic.sticky
            while True:
                topic.sticky = random.choice(choices)
                if topic.sticky != current:
                    return
        elif choices:
            topic.sticky = choices[0]

    def topic(self, name: str) -> TopicState:
        t = self.topics.get(name)
        if t is None:
            t = self.topics[name] = TopicState(name)
        return t

    def set_partitions(self, t: TopicState, count: int, available: list[int]) -> None:
        """Metadata says ``t`` has ``count`` partitions, ``available`` of them with a leader."""
        while len(t.parts) < count:
            t.parts.append(PartitionState(t.name, len(t.parts)))
        first = t.num_partitions == 0
        t.num_partitions = max(count, t.num_partitions)
        t.available = available
        if first or t.sticky >= t.num_partitions:
            self.next_sticky(t)

    # -- either thread (lock held) ---------------------------------------------------------
    def seal_lingering(self, now: float) -> float:
        """Seal every open batch older than ``linger.ms``; the next deadline (monotonic)."""
        self.linger_due = False
        if now < self.next_linger:
            return self.next_linger
        nxt = float("inf")
        linger = 0.0 if self.flushing else self.linger
        parts = self.open_parts
        waiting = []
        # In opening order: the first batch not yet due ends the scan (with many partitions
        # open, a pass over all of them at every deadline would cost O(partitions) each time).
        while parts:
            ps = next(iter(parts))
            deadline = ps.opened + linger
            if deadline > now:
                nxt = deadline
                break
            parts.pop(ps, None)
            if ps.sealed and not self.flushing:
                # A sealed batch of this partition still waits to be sent: sealing another
                # one would only queue a small batch behind it. The open batch keeps growing
                # (to batch.size) until the queue ahead of it is taken.
                waiting.append(ps)
                continue
            self.seal(ps)
        if waiting:
            for ps in reversed(waiting):  # back in front, still open: checked again shortly
                parts[ps] = None
                parts.move_to_end(ps, last=False)
            nxt = min(nxt, now + max(self.linger, RECHECK_S))
        self.next_linger = nxt
        return nxt

    def seal_all(self) -> None:
        for ps in list(self.open_parts):
            self.seal(ps)
        self.next_linger = float("inf")
        self.linger_due = False

    # -- statistics (any thread) --------------------------------------------------------------
    def queue_snapshot(self) -> ProducerQueues:
        """Records held and, per partition, records in the open batch (count and bytes) and
        in sealed batches waiting to be sent; taken under the lock."""
        parts: dict[tuple[str, int], tuple[int, int, int]] = {}
        with self.lock:
            for t in list(self.topics.values()):
                for ps in t.parts:
                    b = ps.builder
                    sealed = list(ps.sealed)  # one C-level copy: the I/O thread pops from it
                    parts[(ps.topic, ps.partition)] = (
                        len(b) if b is not None else 0,
                        b.size_in_bytes if b is not None else 0,
                        sum(batch.count for batch in sealed))
            return ProducerQueues(self.count, self.bytes, self.max_count
                                  if self.max_count < (1 << 62) else 0, self.max_bytes, parts)
