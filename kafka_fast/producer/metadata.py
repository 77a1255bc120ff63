"""``list_topics()`` results with confluent-kafka's attribute names, built from a ClusterView."""

from __future__ import annotations

from typing import Any


class BrokerMetadata:
    """A broker: ``id``, ``host``, ``port``."""

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.id = node_id
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"


class PartitionMetadata:
    """A partition: ``id``, ``leader``, ``replicas``, ``isrs``, ``error``."""

    def __init__(self, pid: int, leader: int, replicas: list[int], isrs: list[int],
                 error: Any) -> None:
        self.id = pid
        self.leader = leader
        self.replicas = replicas
        self.isrs = isrs
        self.error = error

    def __repr__(self) -> str:
        return f"PartitionMetadata({self.id}, leader={self.leader})"


class TopicMetadata:
    """A topic: ``topic``, ``partitions`` (dict by id), ``error``."""

    def __init__(self, topic: str, partitions: dict[int, PartitionMetadata], error: Any) -> None:
        self.topic = topic
        self.partitions = partitions
        self.error = error

    def __repr__(self) -> str:
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"


class ClusterMetadata:
    """``cluster_id``, ``controller_id``, ``brokers`` and ``topics`` (dicts), ``orig_broker_id``."""

    def __init__(self, view: Any, topic: str | None = None) -> None:
        self.cluster_id = view.cluster_id
        self.controller_id = view.controller_id
        self.orig_broker_id = view.source_node
        self.orig_broker_name = None
        self.brokers = {n: BrokerMetadata(b.node_id, b.host, b.port)
                        for n, b in view.brokers.items()}
        self.topics: dict[str, TopicMetadata] = {}
        for name, info in view.topics.items():
            if topic is not None and name != topic:
                continue
            parts = {p: PartitionMetadata(p, pi.leader, list(pi.replicas), list(pi.isr),
                                          pi.error)
                     for p, pi in sorted(info.partitions.items())}
            self.topics[name] = TopicMetadata(name, parts, info.error)

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id}, {len(self.topics)} topics)"
