"""Per-partition consumer state shared by the application thread and the I/O thread.

Writers hold the consumer's lock. ``version`` changes whenever the position is moved by the
application (seek, pause, reset, reassignment); fetched data tagged with an older version is
dropped instead of delivered.
"""

from __future__ import annotations

from typing import Any

from ..topic_partition import OFFSET_INVALID

#: ``need`` values: how a partition without a fetch position gets one.
NEED_NONE = 0
NEED_COMMITTED = 1   # look up the committed offset, else auto.offset.reset
NEED_RESET = 2       # apply reset_to (OFFSET_BEGINNING / OFFSET_END / timestamp lookup)
NEED_VALIDATE = 3    # check the fetch position against the new leader (OffsetForLeaderEpoch)


class PartitionState:
    """Fetch and application positions, pause flag, watermarks and stored offset.

    Leader epochs: ``leader_epoch`` is the epoch of the record before ``position`` (what a
    commit records), ``fetch_epoch`` that of the record before ``fetch_offset``, and
    ``known_leader_epoch`` the partition leader's epoch (from metadata) that ``fetch_offset``
    is known to be valid under. A leader with a newer epoch sends the position through
    validation first (``NEED_VALIDATE``), which detects log truncation.

    Follower fetching (KIP-392): ``read_replica`` is the replica the leader named as the
    preferred one to read from (-1: fetch from the leader), valid until the monotonic time
    ``read_replica_until``.
    """

    __slots__ = (
        "topic", "partition", "fetch_offset", "position", "paused", "version", "need",
        "reset_to", "resolving", "fetching", "fetch_seq", "backoff_until", "leader_epoch",
        "fetch_epoch", "known_leader_epoch", "high_watermark", "last_stable_offset",
        "log_start_offset", "stored", "stored_metadata", "stored_epoch", "committed",
        "eof_reported", "error_reported", "bad_offset", "read_replica", "read_replica_until",
        "topic_id",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.fetch_offset = -1
        self.position = OFFSET_INVALID
        self.paused = False
        self.version = 0
        self.need = NEED_COMMITTED
        self.reset_to: int | None = None
        self.resolving = False
        self.fetching = False
        self.fetch_seq = 0
        self.backoff_until = 0.0
        self.leader_epoch = -1
        self.fetch_epoch = -1
        self.known_leader_epoch = -1
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1
        self.stored = OFFSET_INVALID
        self.stored_metadata: str | None = None
        self.stored_epoch = -1
        self.committed = OFFSET_INVALID
        self.eof_reported = False
        self.error_reported = False
        self.bad_offset = -1
        self.read_replica = -1
        self.read_replica_until = 0.0
        #: The topic's ID when fetching from the current position began: the incarnation
        #: of the topic the position belongs to (None: not fetched since it was set).
        self.topic_id: Any = None

    def set_position(self, offset: int, leader_epoch: int = -1) -> None:
        """Start fetching (and delivering) at ``offset``."""
        self.version += 1
        self.fetch_offset = offset
        self.position = offset
        self.leader_epoch = leader_epoch
        self.fetch_epoch = leader_epoch
        self.known_leader_epoch = -1
        self.need = NEED_NONE
        self.reset_to = None
        self.eof_reported = False
        self.bad_offset = -1
        self.topic_id = None

    def refetch(self, offset: int, epoch: int) -> None:
        """Fetch from ``offset`` again, keeping what was delivered or queued before it;
        answers to Fetches already sent past it are ignored."""
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
        return (f"PartitionState({self.topic}[{self.partition}] fetch={self.fetch_offset} "
                f"position={self.position} need={self.need} paused={self.paused})")
