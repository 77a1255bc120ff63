"""What the I/O thread and the application thread of one consumer share.

Each thread owns its own state (``state.FetchCursor`` on the I/O thread, ``state.AppPosition``
on the application thread); they meet only here, under one lock whose condition wakes a
waiting ``poll``:

- ``ready``, the queue of fetched chunks (I/O thread to application), with its budget
  counters. Each chunk carries the offset that follows it, so the application moves its
  position from what it hands out; a ``start`` chunk tells it where a position it did not
  know was found (committed offset, ``auto.offset.reset``).
- ``commands`` (application to I/O thread): seeks, pauses, resumes, assignment changes and
  validation outcomes, applied by the fetcher at its next turn.
- ``events`` (I/O thread to application): errors, commit reports, rebalances, work to run on
  the polling thread.
- ``parts`` (the assignment, written by the application thread) and ``cursors`` (the fetch
  cursors, written by the I/O thread), each read by the other side only for statistics and
  cached watermarks.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..errors import KafkaError
from ..stats import ConsumerPartition, FetchRecorder
from .state import AppPosition, FetchCursor

#: What the polling thread is told, as tuples: ("error", KafkaError), ("commit", error,
#: offsets[, "raised"]), ("assign", partitions, epoch), ("revoke"|"lost", owned, epoch),
#: ("incremental", added, revoked, epoch), ("call", fn returning KafkaError | None),
#: ("message", Message) (an error event with its topic, handed out as it is).
Event = tuple


#: What the application thread asks of the I/O thread, as tuples: ("seek", AppPosition, gen,
#: offset, leader epoch, paused), ("pause"|"resume", AppPosition, gen, position),
#: ("remove", AppPosition), ("truncated", AppPosition, gen, action, offset, epoch, leader
#: epoch, stop), ("close", None) (see ``Fetcher.apply``).
Command = tuple


class Chunk:
    """Records of one partition from one Fetch response (or an end-of-partition event, or
    with ``start`` the position the application starts from); ``error`` is handed out after
    the records. ``gen`` is the application generation the records were fetched for."""

    __slots__ = ("app", "gen", "segments", "next_offset", "count", "nbytes", "eof", "error",
                 "start", "epoch", "committed")

    def __init__(self, app: AppPosition, gen: int, segments: list, next_offset: int,
                 count: int, nbytes: int, eof: bool = False,
                 error: KafkaError | None = None, start: bool = False, epoch: int = -1,
                 committed: int | None = None) -> None:
        self.error = error
        self.app = app
        self.gen = gen
        self.segments = segments
        self.next_offset = next_offset
        self.count = count
        self.nbytes = nbytes
        self.eof = eof
        #: a position found by the I/O thread: ``next_offset`` with leader epoch ``epoch``,
        #: and the committed offset it came from (if it did)
        self.start = start
        self.epoch = epoch
        self.committed = committed


class FetchState:
    """Fetched chunks, commands and pending events of one consumer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        #: the assignment (application thread writes)
        self.parts: dict[tuple[str, int], AppPosition] = {}
        #: the fetch cursors of the assigned partitions (I/O thread writes)
        self.cursors: dict[tuple[str, int], FetchCursor] = {}
        self.commands: deque[Command] = deque()
        #: offsets partitions are fetched up to, exclusive (application thread writes, lock
        #: held; ``Consumer.fetch_until``): no Fetch asks for records at or past them
        self.fetch_ends: dict[tuple[str, int], int] = {}
        self.ready: deque[Chunk] = deque()
        self.queued_bytes = 0
        self.queued_records = 0
        self.events: deque[Event] = deque()
        #: Called (lock held) when the buffered records of a partition are dropped, so the
        #: delivery side forgets what it built from them.
        self.on_drop: Callable[[AppPosition], None] | None = None
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

    # -- commands (application thread to I/O thread) -----------------------------------------------
    def command(self, cmd: Command) -> None:
        """Queue ``cmd`` for the fetcher (callers hold the lock to order it with their own writes;
        the append itself is atomic), then wake the I/O thread."""
        self.commands.append(cmd)

    def take_commands(self) -> list[Command]:
        """Every queued command, oldest first (caller holds the lock)."""
        out = []
        commands = self.commands
        while commands:  # one at a time: a command appended meanwhile is kept, not cleared
            out.append(commands.popleft())
        return out

    def notify(self) -> None:
        with self.lock:
            self.cond.notify_all()

    # -- partitions --------------------------------------------------------------------------------
    def current(self, app: AppPosition) -> bool:
        """True if ``app`` is still assigned (caller holds the lock)."""
        return self.parts.get((app.topic, app.partition)) is app

    def fetch_end(self, topic: str, partition: int) -> int:
        """The offset ``topic [partition]`` is fetched up to (-1: no bound; lock held)."""
        return self.fetch_ends.get((topic, partition), -1)

    def fetched_to_end(self, topic: str, partition: int, offset: int) -> bool:
        """True when fetching ``topic [partition]`` at ``offset`` would pass its bound (lock
        held)."""
        return 0 <= self.fetch_end(topic, partition) <= offset

    def assigned(self) -> list[tuple[str, int]]:
        with self.lock:
            return sorted(self.parts)

    def topics(self) -> set[str]:
        with self.lock:
            return {cur.topic for cur in self.cursors.values()}

    # -- the queue of fetched chunks ---------------------------------------------------------------
    def full(self, max_bytes: int, max_records: int) -> bool:
        """True when the queue holds its budget (caller holds the lock)."""
        return self.queued_bytes >= max_bytes or self.queued_records >= max_records

    def enqueue(self, chunks: Iterable[Chunk]) -> None:
        """Queue ``chunks`` (I/O thread) and wake the poller."""
        recorder = self.recorder
        with self.lock:
            for ch in chunks:
                self.ready.append(ch)
                self.queued_bytes += ch.nbytes
                self.queued_records += ch.count
                if recorder is not None and ch.count:
                    recorder.fetched(ch.app.topic, ch.app.partition, ch.count, ch.nbytes)
            self.cond.notify_all()

    def pop_ready(self) -> Chunk | None:
        """The next chunk still worth delivering (caller holds the lock)."""
        ready = self.ready
        while ready:
            ch = ready.popleft()
            self.queued_bytes -= ch.nbytes
            self.queued_records -= ch.count
            app = ch.app
            if ch.gen != app.gen or (app.paused and not ch.start) or not self.current(app):
                continue
            return ch
        return None

    def discard(self, app: AppPosition) -> None:
        """Remove the queued chunks of ``app`` (caller holds the lock)."""
        if self.ready:
            keep: deque[Chunk] = deque()
            for ch in self.ready:
                if ch.app is app:
                    self.queued_bytes -= ch.nbytes
                    self.queued_records -= ch.count
                else:
                    keep.append(ch)
            self.ready = keep

    def take_starts(self, app: AppPosition) -> None:
        """Apply the queued start chunks of ``app``'s generation now (application thread,
        lock held): its position is known before the generation changes."""
        if any(ch.start and ch.app is app for ch in self.ready):
            keep: deque[Chunk] = deque()
            for ch in self.ready:
                if ch.start and ch.app is app:
                    if ch.gen == app.gen:
                        app.started(ch.next_offset, ch.epoch, ch.committed)
                else:
                    keep.append(ch)
            self.ready = keep

    def drop_buffered(self, app: AppPosition) -> None:
        """Forget fetched but undelivered records of ``app``, queued or read from
        (application thread, lock held); a position found meanwhile is kept."""
        self.take_starts(app)
        self.discard(app)
        if self.on_drop is not None:
            self.on_drop(app)

    def remove(self, keys: Iterable[tuple[str, int]]) -> None:
        """Unassign ``keys`` (application thread): their records are dropped and the fetcher
        told to stop fetching them."""
        with self.lock:
            for key in keys:
                app = self.parts.pop(key, None)
                if app is not None:
                    app.gen += 1
                    self.drop_buffered(app)
                    self.command(("remove", app))

    def has_work(self, extra: Callable[[], Any] | None = None) -> bool:
        """True if chunks or events wait (caller holds the lock)."""
        return bool(self.ready or self.events)

    # -- statistics (any thread) -------------------------------------------------------------------
    def partition_snapshot(self) -> dict[tuple[str, int], ConsumerPartition]:
        """Positions, watermarks and queued records of every assigned partition."""
        with self.lock:
            queued: dict[AppPosition, list[int]] = {}
            for ch in self.ready:
                q = queued.setdefault(ch.app, [0, 0])
                q[0] += ch.count
                q[1] += ch.nbytes
            out = {}
            for key, app in self.parts.items():
                q = queued.get(app, [0, 0])
                cur = self.cursors.get(key)
                hw, lso, low = (cur.high_watermark, cur.last_stable_offset,
                                cur.log_start_offset) if cur is not None else (-1, -1, -1)
                out[key] = ConsumerPartition(
                    q[0], q[1], app.position, app.stored, app.committed, hw, low, lso)
            return out
