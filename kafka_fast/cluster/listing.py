"""list_topics() and list_groups() results, shaped like confluent-kafka's ClusterMetadata,
GroupMetadata and friends, and the one ``list_topics()`` every client shares."""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from ..errors import KafkaError, KafkaException
from .view import ClusterView

if TYPE_CHECKING:
    from ..net import KafkaClient

#: ``KafkaClient.broker_views()`` state of a connected, usable broker.
_UP = "UP"


class BrokerMetadata:
    def __init__(self, id: int = -1, host: str | None = None, port: int = -1) -> None:
        self.id = id
        self.host = host
        self.port = port

    def __repr__(self) -> str:
        return f"BrokerMetadata({self.id}, {self.host}:{self.port})"

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


class PartitionMetadata:
    def __init__(self) -> None:
        self.id = -1
        self.leader = -1
        self.replicas: list[int] = []
        self.isrs: list[int] = []
        self.error: KafkaError | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"PartitionMetadata({self.id}, {self.error})"
        return f"PartitionMetadata({self.id})"

    def __str__(self) -> str:
        return str(self.id)


class TopicMetadata:
    def __init__(self) -> None:
        self.topic: str | None = None
        self.partitions: dict[int, PartitionMetadata] = {}
        self.error: KafkaError | None = None

    def __repr__(self) -> str:
        if self.error is not None:
            return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions, {self.error})"
        return f"TopicMetadata({self.topic}, {len(self.partitions)} partitions)"

    def __str__(self) -> str:
        return str(self.topic)


class ClusterMetadata:
    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.brokers: dict[int, BrokerMetadata] = {}
        self.topics: dict[str, TopicMetadata] = {}
        self.orig_broker_id = -1
        self.orig_broker_name: str | None = None

    def __repr__(self) -> str:
        return f"ClusterMetadata({self.cluster_id})"

    def __str__(self) -> str:
        return str(self.cluster_id)



class GroupMember:
    """A member of a group as DescribeGroups reports it (metadata and assignment as bytes)."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.client_id: str | None = None
        self.client_host: str | None = None
        self.metadata: bytes | None = None
        self.assignment: bytes | None = None


class GroupMetadata:
    """A group (``list_groups``): coordinator ``broker``, ``id``, ``error``, ``state``,
    ``protocol_type``, ``protocol`` and ``members``."""

    def __init__(self) -> None:
        self.broker: BrokerMetadata | None = None
        self.id: str | None = None
        self.error: KafkaError | None = None
        self.state: str | None = None
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.members: list[GroupMember] = []

    def __repr__(self) -> str:
        if self.error is not None:
            return f"GroupMetadata({self.id}, {self.error})"
        return f"GroupMetadata({self.id})"

    def __str__(self) -> str:
        return str(self.id)

def cluster_metadata(view: ClusterView, topics: list[str] | None) -> ClusterMetadata:
    """The confluent-style metadata for ``topics`` (every topic when None) from ``view``."""
    md = ClusterMetadata()
    md.cluster_id = view.cluster_id
    md.controller_id = view.controller_id
    for b in view.brokers.values():
        md.brokers[b.node_id] = BrokerMetadata(b.node_id, b.host, b.port)
    source = view.brokers.get(view.source_node)
    md.orig_broker_id = view.source_node
    if source is not None:
        md.orig_broker_name = f"{source.host}:{source.port}/{source.node_id}"
    names = list(view.topics) if topics is None else topics
    for name in names:
        info = view.topics.get(name)
        tm = TopicMetadata()
        tm.topic = name
        if info is None:
            tm.error = KafkaError.of(KafkaError.UNKNOWN_TOPIC_OR_PART)
        else:
            tm.error = info.error
            for p in info.partitions.values():
                pm = PartitionMetadata()
                pm.id = p.partition
                pm.leader = p.leader
                pm.replicas = list(p.replicas)
                pm.isrs = list(p.isr)
                pm.error = p.error
                tm.partitions[p.partition] = pm
        md.topics[name] = tm
    return md


def fetch_cluster_metadata(client: KafkaClient, topic: str | None,
                           wait: float | None) -> ClusterMetadata:
    """Cluster metadata for one ``topic`` (or all), fresh from a broker within ``wait``
    seconds (None: no limit). As librdkafka: when the time runs out with no broker connected,
    KafkaException ``_TRANSPORT`` ("Failed to get metadata: Local: Broker transport
    failure"); with one connected but no answer, ``_TIMED_OUT``."""
    fut = client.request_metadata([topic] if topic else None, all_topics=not topic)
    try:
        view = fut.result(wait)
    except FutureTimeout:
        if any(b.state == _UP for b in client.broker_views()):
            code, text = KafkaError._TIMED_OUT, "Local: Timed out"
        else:
            code, text = KafkaError._TRANSPORT, "Local: Broker transport failure"
        raise KafkaException(KafkaError.of(code, f"Failed to get metadata: {text}")) from None
    return cluster_metadata(view, [topic] if topic else None)
