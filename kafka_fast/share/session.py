"""A share session with one broker (KIP-932): its epoch and the partitions in it.

Epoch 0 opens the session (the request lists every partition to fetch); each answered
request moves the epoch on (wrapping from 2**31-1 to 1); -1 closes it. Requests list every
partition fetched (adding is idempotent) and forget the partitions no longer wanted. One
request per session is in flight at a time (``busy``).
"""

from __future__ import annotations

import uuid

from ..errors import KafkaError
from ..protocol import messages as m
from .acks import acknowledge_ack_batches, fetch_ack_batches, has_renew

E = KafkaError
TP = tuple[str, int]
SESSION_ERRORS = frozenset({E.SHARE_SESSION_NOT_FOUND, E.INVALID_SHARE_SESSION_EPOCH})
MAX_EPOCH = 2**31 - 1


class FetchLimits:
    """The size, count and wait bounds of a ShareFetch."""

    def __init__(self, max_wait_ms: int, min_bytes: int, max_bytes: int,
                 max_records: int) -> None:
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_records = max_records


class ShareSession:
    """The client side of one broker's share session (application thread only)."""

    def __init__(self, node_id: int, group_id: str) -> None:
        self.node_id = node_id
        self.group_id = group_id
        self.epoch = 0
        self.partitions: set[TP] = set()
        self.busy = False
        #: no request before this monotonic time (set after a failed one)
        self.not_before = 0.0

    def fetch_request(self, member_id: str, wanted: set[TP],
                      acks: dict[TP, dict[int, int]], ids: dict[str, uuid.UUID],
                      limits: FetchLimits, max_wait_ms: int) -> m.ShareFetchRequest:
        """A ShareFetch for ``wanted`` carrying ``acks`` (which renew no lock: those go in a
        ShareAcknowledge); ``ids`` maps topic names to ids."""
        R = m.ShareFetchRequest
        listed = wanted | set(acks)
        topics: dict[str, list] = {}
        for t, p in sorted(listed):
            topics.setdefault(t, []).append(R.FetchPartition(
                partition_index=p,
                acknowledgement_batches=fetch_ack_batches(acks.get((t, p), {}))))
        forgotten: dict[str, list[int]] = {}
        if self.epoch > 0:
            for t, p in sorted(self.partitions - listed):
                forgotten.setdefault(t, []).append(p)
        self.partitions = listed
        return R(group_id=self.group_id, member_id=member_id, share_session_epoch=self.epoch,
                 max_wait_ms=max_wait_ms, min_bytes=limits.min_bytes,
                 max_bytes=limits.max_bytes, max_records=limits.max_records,
                 batch_size=limits.max_records,
                 topics=[R.FetchTopic(topic_id=ids[t], partitions=parts)
                         for t, parts in topics.items()],
                 forgotten_topics_data=[R.ForgottenTopic(topic_id=ids[t], partitions=parts)
                                        for t, parts in forgotten.items()])

    def acknowledge_request(self, member_id: str, acks: dict[TP, dict[int, int]],
                            ids: dict[str, uuid.UUID], close: bool = False
                            ) -> m.ShareAcknowledgeRequest:
        """A ShareAcknowledge carrying ``acks`` (``close``: with epoch -1, ending the
        session); IsRenewAck says whether any of them renews a lock."""
        R = m.ShareAcknowledgeRequest
        topics: dict[str, list] = {}
        for (t, p), offsets in sorted(acks.items()):
            topics.setdefault(t, []).append(R.AcknowledgePartition(
                partition_index=p, acknowledgement_batches=acknowledge_ack_batches(offsets)))
        return R(group_id=self.group_id, member_id=member_id,
                 share_session_epoch=-1 if close else self.epoch,
                 is_renew_ack=has_renew(acks),
                 topics=[R.AcknowledgeTopic(topic_id=ids[t], partitions=parts)
                         for t, parts in topics.items()])

    def answered(self, error_code: int) -> None:
        """A request of this session was answered with top-level ``error_code``."""
        if error_code in SESSION_ERRORS:
            self.reset()
        elif not error_code:
            self.epoch = 1 if self.epoch >= MAX_EPOCH else self.epoch + 1

    def reset(self) -> None:
        """The session is gone (closed, lost or unknown to the broker): open a new one."""
        self.epoch = 0
        self.partitions = set()
