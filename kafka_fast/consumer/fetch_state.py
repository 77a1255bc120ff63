"""The state the fetch side shares with the polling thread.

One ``FetchState`` per consumer holds the assigned partitions, the queue of fetched chunks with
its budget counters, and the events waiting for the polling thread, all under one lock whose
condition wakes a waiting ``poll``. The fetcher, the position validator and the group member
(I/O thread) and the delivery side (application thread) each hold a reference to it; nobody
reaches into the consumer itself.

Lock rule: every field here is read and written under ``lock``; the methods documented as
"caller holds the lock" must be called inside ``with state.lock``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import KafkaError
from ..stats import ConsumerPartition, FetchRecorder
from .state import PartitionState

#: What the polling thread is told, as tuples: ("error", KafkaError), ("commit", error,
#: offsets[, "raised"]), ("assign", partitions, epoch), ("revoke"|"lost", owned, epoch),
#: ("incremental", added, revoked, epoch), ("call", fn returning KafkaError | None),
#: ("message", Message) (an error event with its topic, handed out as it is).
Event = tuple


class Chunk:
    """Records of one partition from one Fetch response (or an end-of-partition event);
    ``error`` is handed out after the records."""

    __slots__ = ("state", "version", "segments", "next_offset", "count", "nbytes", "eof",
                 "error")

    def __init__(self, state: PartitionState, version: int, segments: list, next_offset: int,
                 count: int, nbytes: int, eof: bool = False,
                 error: KafkaError | None = None) -> None:
        self.error = error
        self.state = state
        self.version = version
        self.segments = segments
        self.next_offset = next_offset
        self.count = count
        self.nbytes = nbytes
        self.eof = eof


class FetchState:
    """Assigned partitions, fetched chunks and pending events of one consumer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.parts: dict[tuple[str, int], PartitionState] = {}
        self.ready: deque[Chunk] = deque()
        self.queued_bytes = 0
        self.queued_records = 0
        self.events: deque[Event] = deque()
        #: Called (lock held) when the buffered records of a partition are dropped, so the
        #: delivery side forgets what it built from them.
        self.on_drop: Callable[[PartitionState], None] | None = None
        #: counts fetched records for the statistics (one call per queued chunk)
        self.recorder: FetchRecorder | None = None

    # -- events ------------------------------------------------------------------------------------
    def post(self, event: Event) -> None:
        """Queue ``event`` for the polling thread and wake it."""
        with self.lock:
            self.events.append(event)
            self.cond.notify_all()

    def post_error(self, err: KafkaError) -> None:
        self.post(("error", err))

    def next_event(self) -> Event | None:
        with self.lock:
            return self.events.popleft() if self.events else None

    def take_events(self, kind: str) -> list[Event]:
        """Remove every pending event and return those of ``kind``."""
        with self.lock:
            out = [e for e in self.events if e[0] == kind]
            self.events.clear()
        return out

    def notify(self) -> None:
        with self.lock:
            self.cond.notify_all()

    # -- partitions --------------------------------------------------------------------------------
    def current(self, ps: PartitionState) -> bool:
        """True if ``ps`` is still the assigned state of its partition (caller holds the lock)."""
        return self.parts.get((ps.topic, ps.partition)) is ps

    def assigned(self) -> list[tuple[str, int]]:
        with self.lock:
            return sorted(self.parts)

    def topics(self) -> set[str]:
        with self.lock:
            return {ps.topic for ps in self.parts.values()}

    # -- the queue of fetched chunks ---------------------------------------------------------------
    def full(self, max_bytes: int, max_records: int) -> bool:
        """True when the queue holds its budget (caller holds the lock)."""
        return self.queued_bytes >= max_bytes or self.queued_records >= max_records

    def enqueue(self, chunks: Iterable[Chunk]) -> None:
        """Queue the chunks whose partition state is still current and wake the poller."""
        recorder = self.recorder
        with self.lock:
            for ch in chunks:
                if ch.version == ch.state.version and self.current(ch.state):
                    self.ready.append(ch)
                    self.queued_bytes += ch.nbytes
                    self.queued_records += ch.count
                    if recorder is not None and ch.count:
                        recorder.fetched(ch.state.topic, ch.state.partition, ch.count,
                                         ch.nbytes)
            self.cond.notify_all()

    def pop_ready(self) -> Chunk | None:
        """The next chunk still worth delivering (caller holds the lock)."""
        ready = self.ready
        while ready:
            ch = ready.popleft()
            self.queued_bytes -= ch.nbytes
            self.queued_records -= ch.count
            ps = ch.state
            if ch.version != ps.version or ps.paused or not self.current(ps):
                continue
            return ch
        return None

    def drop_buffered(self, ps: PartitionState) -> None:
        """Forget fetched but undelivered records of ``ps`` (caller holds the lock)."""
        if self.ready:
            keep: deque[Chunk] = deque()
            for ch in self.ready:
                if ch.state is ps:
                    self.queued_bytes -= ch.nbytes
                    self.queued_records -= ch.count
                else:
                    keep.append(ch)
            self.ready = keep
        if self.on_drop is not None:
            self.on_drop(ps)

    def remove(self, keys: Iterable[tuple[str, int]]) -> None:
        """Unassign ``keys``: their states are retired and their records dropped."""
        with self.lock:
            for key in keys:
                ps = self.parts.pop(key, None)
                if ps is not None:
                    ps.version += 1
                    self.drop_buffered(ps)

    def has_work(self, extra: Callable[[], Any] | None = None) -> bool:
        """True if chunks or events wait (caller holds the lock)."""
        return bool(self.ready or self.events)

    # -- statistics (any thread) -------------------------------------------------------------------
    def partition_snapshot(self) -> dict[tuple[str, int], ConsumerPartition]:
        """Positions, watermarks and queued records of every assigned partition."""
        with self.lock:
            queued: dict[PartitionState, list[int]] = {}
            for ch in self.ready:
                q = queued.setdefault(ch.state, [0, 0])
                q[0] += ch.count
                q[1] += ch.nbytes
            out = {}
            for key, ps in self.parts.items():
                q = queued.get(ps, [0, 0])
                out[key] = ConsumerPartition(
                    q[0], q[1], ps.position, ps.stored, ps.committed, ps.high_watermark,
                    ps.log_start_offset, ps.last_stable_offset)
            return out
