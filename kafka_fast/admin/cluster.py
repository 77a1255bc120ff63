"""The cluster and its topics: describe_cluster (DescribeCluster, Metadata on brokers without
it), describe_topics (Metadata) and elect_leaders (ElectLeaders)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from ..errors import KafkaError
from ..net.client import KafkaClient
from ..net.request import settle_all
from ..protocol import messages as m
from ..protocol.versioned import versioned
from ..topic_partition import TopicPartition
from .acls import AclOperation, authorized_operations
from .calls import ANY, CONTROLLER, AdminCall, error_of, exception_error
from .model import ElectionType, Node, TopicPartitionInfo, Uuid, to_enum

_CLUSTER = "cluster"
_ELECTION = "election"


class DescribeClusterResult:
    """The cluster: ``controller`` (a Node, None if unknown), ``nodes``, ``cluster_id`` and
    (when asked for) the operations this client may perform on it."""

    def __init__(self, controller: Node | None, nodes: list[Node],
                 cluster_id: str | None = None,
                 authorized_operations: Sequence[AclOperation | str | int] | None = None) -> None:
        self.cluster_id = cluster_id
        self.controller = controller
        self.nodes = nodes
        self.authorized_operations = ([to_enum(op, AclOperation) for op in
                                       authorized_operations] if authorized_operations
                                      else None)


class TopicDescription:
    """A topic: ``name``, ``topic_id`` (Uuid), ``is_internal``, ``partitions`` (list of
    TopicPartitionInfo by id) and (when asked for) ``authorized_operations``."""

    def __init__(self, name: str, topic_id: Uuid | None, is_internal: bool,
                 partitions: list[TopicPartitionInfo],
                 authorized_operations: Sequence[AclOperation | str | int] | None = None) -> None:
        self.name = name
        self.topic_id = topic_id
        self.is_internal = is_internal
        self.partitions = partitions
        self.authorized_operations = ([to_enum(op, AclOperation) for op in
                                       authorized_operations] if authorized_operations
                                      else None)

    def __repr__(self) -> str:
        return f"TopicDescription({self.name!r}, {len(self.partitions)} partitions)"


def _nodes(brokers: list[Any], id_attr: str) -> dict[int, Node]:
    return {getattr(b, id_attr): Node(getattr(b, id_attr), b.host, b.port, b.rack)
            for b in brokers}


def _then(first: Future, fallback_codes: frozenset[int], second: Callable[[], Future]
          ) -> Future:
    """``first``'s outcome, or ``second()``'s when ``first`` failed with a fallback code."""
    out: Future = Future()

    def copy(f: Future) -> None:
        settle_all([out], None if f.exception() else f.result(), f.exception())

    def done(f: Future) -> None:
        exc = f.exception()
        if exc is not None and exception_error(exc).code() in fallback_codes:
            second().add_done_callback(copy)
        else:
            copy(f)

    first.add_done_callback(done)
    return out


def describe_cluster(client: KafkaClient, include_authorized_operations: bool,
                     timeout: float) -> Future:
    """DescribeCluster on any broker (Metadata where it is missing); a Future of
    DescribeClusterResult."""
    ops = include_authorized_operations
    deadline = time.monotonic() + timeout

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        err = error_of(resp.error_code, resp.error_message)
        if err is not None:
            return {_CLUSTER: err}
        nodes = _nodes(resp.brokers, "broker_id")
        return {_CLUSTER: DescribeClusterResult(
            nodes.get(resp.controller_id), sorted(nodes.values(), key=lambda n: n.id),
            resp.cluster_id,
            authorized_operations(resp.cluster_authorized_operations) if ops else None)}

    def from_metadata() -> Future:
        def build(_: list[str]) -> Any:
            return versioned(m.MetadataRequest, lambda: m.MetadataRequest(
                topics=[], allow_auto_topic_creation=False,
                include_cluster_authorized_operations=ops))

        def parse_md(resp: Any, _: list[str]) -> dict[str, Any]:
            nodes = _nodes(resp.brokers, "node_id")
            bits = getattr(resp, "cluster_authorized_operations", None)
            return {_CLUSTER: DescribeClusterResult(
                nodes.get(getattr(resp, "controller_id", -1)),
                sorted(nodes.values(), key=lambda n: n.id), getattr(resp, "cluster_id", None),
                authorized_operations(bits) if ops else None)}

        return AdminCall(client, [_CLUSTER], build, parse_md, lambda _: ANY,
                         max(0.001, deadline - time.monotonic())).start()[_CLUSTER]

    first = AdminCall(client, [_CLUSTER], lambda _: m.DescribeClusterRequest(
        include_cluster_authorized_operations=ops), parse, lambda _: ANY, timeout).start()
    return _then(first[_CLUSTER], frozenset({KafkaError._UNSUPPORTED_FEATURE}), from_metadata)


def describe_topics(client: KafkaClient, names: list[str], include_authorized_operations: bool,
                    timeout: float) -> dict[str, Future]:
    """Metadata for ``names`` (never creating them); ``{name: Future of TopicDescription}``."""
    ops = include_authorized_operations

    def build(group: list[str]) -> Any:
        return versioned(m.MetadataRequest, lambda: m.MetadataRequest(
            topics=[m.MetadataRequest.MetadataRequestTopic(name=n) for n in group],
            allow_auto_topic_creation=False, include_topic_authorized_operations=ops))

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        nodes = _nodes(resp.brokers, "node_id")

        def node(i: int) -> Node:
            return nodes.get(i) or Node(i, "", -1)

        out: dict[str, Any] = {}
        for t in resp.topics:
            err = error_of(t.error_code)
            if err is not None:
                out[t.name] = err
                continue
            parts = [TopicPartitionInfo(p.partition_index,
                                        node(p.leader_id) if p.leader_id >= 0 else None,
                                        [node(i) for i in p.replica_nodes],
                                        [node(i) for i in p.isr_nodes])
                     for p in sorted(t.partitions, key=lambda p: p.partition_index)]
            topic_id = getattr(t, "topic_id", None)
            out[t.name] = TopicDescription(
                t.name, Uuid.from_uuid(topic_id) if topic_id and topic_id.int else None,
                bool(getattr(t, "is_internal", False)), parts,
                authorized_operations(getattr(t, "topic_authorized_operations", None))
                if ops else None)
        return out

    return AdminCall(client, list(names), build, parse, lambda _: ANY, timeout).start()


def elect_leaders(client: KafkaClient, election_type: ElectionType,
                  partitions: list[TopicPartition] | None, operation_ms: int,
                  timeout: float) -> Future:
    """ElectLeaders at the controller; a Future of ``{TopicPartition: KafkaError | None}``
    (None: the partition has the leader asked for)."""
    R = m.ElectLeadersRequest

    def make() -> Any:
        topics = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [R.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]
        return R(election_type=election_type.value, topic_partitions=topics,
                 timeout_ms=operation_ms)

    def parse(resp: Any, _: list[str]) -> dict[str, Any]:
        err = error_of(getattr(resp, "error_code", 0))
        if err is not None:
            return {_ELECTION: err}
        out = {}
        for t in resp.replica_election_results:
            for p in t.partition_result:
                perr = error_of(p.error_code, p.error_message)
                out[TopicPartition(t.topic, p.partition_id, error=perr)] = perr
        return {_ELECTION: out}

    return AdminCall(client, [_ELECTION], lambda _: versioned(R, make), parse,
                     lambda _: CONTROLLER, timeout).start()[_ELECTION]
