"""Incremental fetch sessions (KIP-227): what one leader's next Fetch must carry.

A session starts with a full Fetch (SessionId 0, SessionEpoch 0). When the broker answers with
a non-zero session id, later Fetches are incremental: they name only the partitions that are
new or whose fetch state changed, list the partitions to drop in ForgottenTopicsData, and carry
the next epoch (1, 2, ... wrapping from 2**31-1 to 1). Partitions the broker leaves out of an
incremental response have no new data. A session error, a failed request or an unexpected
answer goes back to a full Fetch. Epoch -1 closes a session.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ..errors import KafkaError
from ..protocol import messages as m

#: Session id meaning "no session".
INVALID_SESSION_ID = 0
#: Epoch that asks for a new session (with session id 0).
INITIAL_EPOCH = 0
#: Epoch that closes a session (or, with session id 0, fetches without one).
FINAL_EPOCH = -1
_MAX_EPOCH = 2**31 - 1

#: Top-level Fetch errors that mean the broker no longer holds our session as we know it.
SESSION_ERRORS = frozenset((KafkaError.FETCH_SESSION_ID_NOT_FOUND,
                            KafkaError.INVALID_FETCH_SESSION_EPOCH,
                            KafkaError.FETCH_SESSION_TOPIC_ID_ERROR))

#: What the broker keeps per partition: (fetch offset, current leader epoch, max bytes).
PartitionFetch = tuple[int, int, int]
Key = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``, wrapping as Kafka does (never back to 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch >= _MAX_EPOCH else epoch + 1


class FetchPlan:
    """One Fetch to send: session id and epoch, the partitions to put in the request, the
    partitions to forget, and every partition the response may answer for."""

    __slots__ = ("session_id", "epoch", "send", "forgotten", "wanted")

    def __init__(self, session_id: int, epoch: int, send: dict[Key, PartitionFetch],
                 forgotten: list[Key], wanted: dict[Key, PartitionFetch]) -> None:
        self.session_id = session_id
        self.epoch = epoch
        self.send = send
        self.forgotten = forgotten
        self.wanted = wanted

    @property
    def incremental(self) -> bool:
        return self.session_id != INVALID_SESSION_ID and self.epoch > 0

    def forgotten_by_topic(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = defaultdict(list)
        for topic, partition in self.forgotten:
            out[topic].append(partition)
        return dict(out)


class FetchSession:
    """Session state for one leader. Not thread-safe: used by the I/O thread only."""

    __slots__ = ("enabled", "session_id", "epoch", "known")

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        #: The partitions (and their fetch state) the broker's session holds.
        self.known: dict[Key, PartitionFetch] = {}

    def reset(self) -> None:
        """Forget the session: the next Fetch is a full one asking for a new session."""
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.known = {}

    @property
    def active(self) -> bool:
        return self.session_id != INVALID_SESSION_ID

    def plan(self, wanted: dict[Key, PartitionFetch]) -> FetchPlan:
        """The next Fetch for exactly the partitions in ``wanted``."""
        if not self.enabled:
            return FetchPlan(INVALID_SESSION_ID, FINAL_EPOCH, dict(wanted), [], wanted)
        if not self.active:
            return FetchPlan(INVALID_SESSION_ID, INITIAL_EPOCH, dict(wanted), [], wanted)
        known = self.known
        send = {k: v for k, v in wanted.items() if known.get(k) != v}
        forgotten = [k for k in known if k not in wanted]
        return FetchPlan(self.session_id, self.epoch, send, forgotten, wanted)

    def close_plan(self) -> FetchPlan | None:
        """A Fetch closing the session (None when there is none); the state is reset."""
        if not self.enabled or not self.active:
            return None
        plan = FetchPlan(self.session_id, FINAL_EPOCH, {}, [], {})
        self.reset()
        return plan

    def handle_response(self, plan: FetchPlan, resp: Any) -> bool:
        """Update the session from the answer to ``plan`` (``resp`` None: the request failed).

        Returns True when partitions left out of the response simply have no new data.
        """
        if not self.enabled:
            return False
        if resp is None or resp.error_code:
            self.reset()
            return False
        session_id = resp.session_id
        if not plan.incremental:
            if session_id == INVALID_SESSION_ID:
                self.reset()
            else:
                self.session_id = session_id
                self.epoch = 1
                self.known = dict(plan.wanted)
            return False
        if session_id == INVALID_SESSION_ID:
            # An incremental answer that closes the session: start over with a full Fetch.
            self.reset()
            return True
        if session_id != plan.session_id or plan.session_id != self.session_id:
            self.reset()
            return False
        self.known = dict(plan.wanted)
        self.epoch = next_epoch(plan.epoch)
        return True


def fetch_request(plan: FetchPlan, *, max_wait_ms: int, min_bytes: int, max_bytes: int,
                  isolation_level: int, rack_id: str = "",
                  topic_ids: dict[str, Any] | None = None) -> m.FetchRequest:
    """The FetchRequest that carries ``plan``: topics by name, or by ID from ``topic_ids``
    (which then has every topic of the plan: Fetch v13+)."""
    FP = m.FetchRequest.FetchTopic.FetchPartition
    topics: dict[str, list] = defaultdict(list)
    for (topic, partition), (offset, epoch, part_max) in plan.send.items():
        topics[topic].append(FP(
            partition=partition, current_leader_epoch=epoch, fetch_offset=offset,
            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=part_max))
    forgotten = plan.forgotten_by_topic()
    if topic_ids is not None:
        fetch = [m.FetchRequest.FetchTopic(topic_id=topic_ids[t], partitions=ps)
                 for t, ps in topics.items()]
        forget = [m.FetchRequest.ForgottenTopic(topic_id=topic_ids[t], partitions=ps)
                  for t, ps in forgotten.items()]
    else:
        fetch = [m.FetchRequest.FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()]
        forget = [m.FetchRequest.ForgottenTopic(topic=t, partitions=ps)
                  for t, ps in forgotten.items()]
    return m.FetchRequest(
        replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=min_bytes, max_bytes=max_bytes,
        isolation_level=isolation_level, session_id=plan.session_id, session_epoch=plan.epoch,
        topics=fetch, forgotten_topics_data=forget, rack_id=rack_id)
