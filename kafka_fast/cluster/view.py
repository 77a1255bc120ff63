"""An immutable snapshot of cluster metadata, replaced (never mutated) on every refresh."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaError


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int  # -1 when there is no leader
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: KafkaError | None = None


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    error: KafkaError | None
    partitions: Mapping[int, PartitionInfo] = field(default_factory=dict)
    is_internal: bool = False


@dataclass(frozen=True)
class ClusterView:
    """Brokers, topics and partitions as last reported by the cluster.

    ``updated`` is the monotonic time of the Metadata response this view came from (0 for
    the empty view); ``source_node`` the broker that answered.
    """

    brokers: Mapping[int, Broker] = field(default_factory=dict)
    topics: Mapping[str, TopicInfo] = field(default_factory=dict)
    cluster_id: str | None = None
    controller_id: int = -1
    updated: float = 0.0
    source_node: int = -1

    def leader(self, topic: str, partition: int) -> int | None:
        """The leader's node id, or None if unknown or leaderless."""
        info = self.topics.get(topic)
        if info is None:
            return None
        p = info.partitions.get(partition)
        if p is None or p.leader < 0:
            return None
        return p.leader

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition leader's epoch (-1 if unknown or not reported)."""
        info = self.topics.get(topic)
        p = info.partitions.get(partition) if info is not None else None
        return p.leader_epoch if p is not None and p.leader >= 0 else -1

    def replica_online(self, topic: str, partition: int, node: int) -> bool:
        """True if ``node`` is a known broker holding a replica of the partition that
        metadata does not list as offline."""
        info = self.topics.get(topic)
        p = info.partitions.get(partition) if info is not None else None
        return (p is not None and node in self.brokers and node in p.replicas
                and node not in p.offline_replicas)

    def partitions_for(self, topic: str) -> list[int] | None:
        """Sorted partition ids of ``topic`` (None if the topic is unknown or in error)."""
        info = self.topics.get(topic)
        if info is None or info.error is not None:
            return None
        return sorted(info.partitions)

    def merge(self, resp: Any, requested: Iterable[str] | None, source_node: int) -> ClusterView:
        """A new view from a MetadataResponse.

        ``requested`` None means the response covers every topic (others are dropped);
        otherwise topics not in the response are kept from this view.
        """
        brokers = {b.node_id: Broker(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}
        topics: dict[str, TopicInfo] = {} if requested is None else dict(self.topics)
        for t in resp.topics:
            if t.name is None:
                continue
            topics[t.name] = topic_info(t)
        if not brokers:
            brokers = dict(self.brokers)
        return ClusterView(
            brokers=brokers,
            topics=topics,
            cluster_id=getattr(resp, "cluster_id", None),
            controller_id=getattr(resp, "controller_id", -1),
            updated=time.monotonic(),
            source_node=source_node,
        )


def _error(code: int) -> KafkaError | None:
    return KafkaError.of(code) if code else None


def topic_info(t: Any) -> TopicInfo:
    parts = {}
    for p in t.partitions:
        parts[p.partition_index] = PartitionInfo(
            partition=p.partition_index,
            leader=p.leader_id,
            leader_epoch=getattr(p, "leader_epoch", -1),
            replicas=tuple(p.replica_nodes),
            isr=tuple(p.isr_nodes),
            offline_replicas=tuple(getattr(p, "offline_replicas", ()) or ()),
            error=_error(p.error_code),
        )
    topic_id = getattr(t, "topic_id", None)
    if topic_id is not None and getattr(topic_id, "int", 1) == 0:
        topic_id = None
    return TopicInfo(name=t.name, topic_id=topic_id, error=_error(t.error_code),
                     partitions=parts, is_internal=bool(getattr(t, "is_internal", False)))
