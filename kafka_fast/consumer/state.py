"""Per-partition consumer state, in two objects with one writing thread each.

``AppPosition`` belongs to the application thread: the position it has reached (from the
records handed to it), the stored and committed offsets, the pause flag and ``gen``, which
grows whenever the application moves the position (seek, pause, resume, reassignment).
``FetchCursor`` belongs to the I/O thread: where the next Fetch starts, its leader epoch,
whether a Fetch is in flight, back-off, the preferred read replica, how a missing position is
found and validated, and the watermarks of the last answer. The application changes a cursor
only through commands the I/O thread applies (``FetchState.command``); the I/O thread tells
the application about positions only through chunks (``fetch_state.Chunk``) tagged with the
``gen`` they were fetched for, so chunks fetched before a seek are dropped, never delivered.
"""

from __future__ import annotations

from typing import Any

from ..topic_partition import OFFSET_INVALID
from .ownership import armed, owned

#: ``need`` values: how a partition without a fetch position gets one.
NEED_NONE = 0
NEED_COMMITTED = 1   # look up the committed offset, else auto.offset.reset
NEED_RESET = 2       # apply reset_to (OFFSET_BEGINNING / OFFSET_END / timestamp lookup)
NEED_VALIDATE = 3    # check the fetch position against the new leader (OffsetForLeaderEpoch)


@owned
class AppPosition:
    """What the application has received of one partition (application thread only).

    ``leader_epoch`` is the epoch of the record before ``position`` (what a commit records).
    """

    __slots__ = ("topic", "partition", "position", "leader_epoch", "paused", "gen", "stored",
                 "stored_metadata", "stored_epoch", "committed", "_writers")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.position = OFFSET_INVALID
        self.leader_epoch = -1
        self.paused = False
        self.gen = 0
        self.stored = OFFSET_INVALID
        self.stored_metadata: str | None = None
        self.stored_epoch = -1
        self.committed = OFFSET_INVALID
        armed(self)

    def moved(self, offset: int | None, leader_epoch: int = -1) -> int:
        """The application goes on from ``offset`` (None: where the fetcher will find, the
        position staying as it is until then); the new ``gen`` (chunks of older ones are
        dropped)."""
        self.gen += 1
        if offset is not None:
            self.position = offset
            self.leader_epoch = leader_epoch
        return self.gen

    def started(self, offset: int, leader_epoch: int, committed: int | None) -> None:
        """The fetcher found the position: ``offset`` (from the committed offset
        ``committed`` if not None)."""
        self.position = offset
        self.leader_epoch = leader_epoch
        if committed is not None:
            self.committed = committed

    def __repr__(self) -> str:
        return (f"AppPosition({self.topic}[{self.partition}] position={self.position} "
                f"gen={self.gen} paused={self.paused})")


@owned
class FetchCursor:
    """Where fetching one partition stands (I/O thread only).

    Leader epochs: ``fetch_epoch`` is the epoch of the record before ``fetch_offset``, and
    ``known_leader_epoch`` the partition leader's epoch (from metadata) that ``fetch_offset``
    is known to be valid under. A leader with a newer epoch sends the position through
    validation first (``NEED_VALIDATE``), which detects log truncation.

    ``app`` is the application's ``AppPosition`` of the partition (never written here): chunks
    name it, with ``gen``, the application generation the cursor fetches for. ``version``
    grows whenever the fetch position is dropped or moved, so answers to Fetches sent before
    are ignored.

    Follower fetching (KIP-392): ``read_replica`` is the replica the leader named as the
    preferred one to read from (-1: fetch from the leader), valid until the monotonic time
    ``read_replica_until``.
    """

    __slots__ = (
        "topic", "partition", "app", "gen", "fetch_offset", "paused", "version", "need",
        "reset_to", "resolving", "fetching", "fetch_seq", "backoff_until", "fetch_epoch",
        "known_leader_epoch", "high_watermark", "last_stable_offset", "log_start_offset",
        "eof_reported", "error_reported", "bad_offset", "read_replica", "read_replica_until",
        "topic_id", "_writers",
    )

    def __init__(self, app: AppPosition, gen: int) -> None:
        self.topic = app.topic
        self.partition = app.partition
        self.app = app
        self.gen = gen
        self.fetch_offset = -1
        self.paused = False
        self.version = 0
        self.need = NEED_COMMITTED
        self.reset_to: int | None = None
        self.resolving = False
        self.fetching = False
        self.fetch_seq = 0
        self.backoff_until = 0.0
        self.fetch_epoch = -1
        self.known_leader_epoch = -1
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.eof_reported = False
        self.error_reported = False
        self.bad_offset = -1
        self.read_replica = -1
        self.read_replica_until = 0.0
        #: The topic's ID when fetching from the current position began: the incarnation
        #: of the topic the position belongs to (None: not fetched since it was set).
        self.topic_id: Any = None
        armed(self)

    def set_position(self, offset: int, leader_epoch: int = -1) -> None:
        """Start fetching at ``offset``."""
        self.version += 1
        self.fetch_offset = offset
        self.fetch_epoch = leader_epoch
        self.known_leader_epoch = -1
        self.need = NEED_NONE
        self.reset_to = None
        self.eof_reported = False
        self.bad_offset = -1
        self.topic_id = None

    def refetch(self, offset: int, epoch: int) -> None:
        """Fetch from ``offset`` again, keeping what was queued before it; answers to Fetches
        already sent past it are ignored."""
        self.fetch_seq += 1
        self.fetch_offset = offset
        self.fetch_epoch = epoch

    def require(self, need: int, reset_to: int | None = None) -> None:
        """Drop the fetch position until it is looked up again."""
        self.version += 1
        self.fetch_offset = -1
        self.need = need
        self.reset_to = reset_to
        self.resolving = False

    def needs_validation(self, current_leader_epoch: int) -> bool:
        """True when the leader's epoch is newer than the one ``fetch_offset`` is known valid
        under and the position carries an epoch to check."""
        return self.fetch_epoch >= 0 and current_leader_epoch > self.known_leader_epoch

    def preferred_replica(self, now: float) -> int:
        """The replica to fetch from instead of the leader (-1: the leader); a preference
        older than its expiry is dropped, so the leader is asked again."""
        if self.read_replica >= 0 and now >= self.read_replica_until:
            self.read_replica = -1
        return self.read_replica

    def prefer_replica(self, node: int, until: float) -> None:
        """Fetch from ``node`` (named by the leader) until ``until``."""
        self.read_replica = node
        self.read_replica_until = until

    def clear_read_replica(self) -> int:
        """Go back to fetching from the leader; the replica that was preferred (or -1)."""
        node, self.read_replica = self.read_replica, -1
        return node

    def fetchable(self, now: float) -> bool:
        return (self.need == NEED_NONE and not self.paused and not self.fetching
                and now >= self.backoff_until)

    def __repr__(self) -> str:
        return (f"FetchCursor({self.topic}[{self.partition}] fetch={self.fetch_offset} "
                f"need={self.need} paused={self.paused} gen={self.gen})")
