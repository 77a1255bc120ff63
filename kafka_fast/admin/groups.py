"""Consumer groups for the AdminClient: list them (ListGroups on every broker) and read their
committed offsets (OffsetFetch at each group's coordinator). Result types follow
confluent-kafka's names and fields."""

from __future__ import annotations

import enum
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ..consumer.requests import versioned
from ..errors import KafkaError, KafkaException
from ..net.backoff import Backoff
from ..net.client import KafkaClient
from ..net.request import settle_all
from ..protocol import messages as m
from ..topic_partition import TopicPartition

_RETRY = frozenset({KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                    KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError._TRANSPORT})


class ConsumerGroupState(enum.Enum):
    """A group's state as the broker names it (confluent-kafka's values)."""

    UNKNOWN = 0
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5

    @classmethod
    def from_broker(cls, name: str) -> ConsumerGroupState:
        return {"PreparingRebalance": cls.PREPARING_REBALANCING,
                "CompletingRebalance": cls.COMPLETING_REBALANCING, "Stable": cls.STABLE,
                "Dead": cls.DEAD, "Empty": cls.EMPTY}.get(name, cls.UNKNOWN)


@dataclass
class ConsumerGroupListing:
    """One group a broker coordinates."""

    group_id: str
    is_simple_consumer_group: bool
    state: ConsumerGroupState = ConsumerGroupState.UNKNOWN


@dataclass
class ListConsumerGroupsResult:
    """Every group found (``valid``) and the brokers that could not be asked (``errors``)."""

    valid: list[ConsumerGroupListing] = field(default_factory=list)
    errors: list[KafkaError] = field(default_factory=list)


@dataclass
class ConsumerGroupTopicPartitions:
    """A group and partitions of it: the request (``topic_partitions`` None: every partition
    the group has committed) and the answer (offsets filled in)."""

    group_id: str
    topic_partitions: list[TopicPartition] | None = None

    def __hash__(self) -> int:
        return hash(self.group_id)


def list_groups(client: KafkaClient, timeout: float) -> Future:
    """ListGroups on every broker; a Future of ListConsumerGroupsResult."""
    out: Future = Future()
    result = ListConsumerGroupsResult()
    ms = max(1, int(timeout * 1000))

    def ask(view_fut: Future) -> None:
        if view_fut.exception() is not None:
            settle_all([out], error=view_fut.exception())
            return
        nodes = sorted(view_fut.result().brokers)
        pending = {"n": len(nodes)}
        if not nodes:
            settle_all([out], result)
            return

        def answered(node: int, fut: Future) -> None:
            exc = fut.exception()
            if exc is not None:
                err = exc.args[0] if isinstance(exc, KafkaException) else KafkaError(
                    KafkaError._FAIL, str(exc))
                result.errors.append(KafkaError(err.code(), f"broker {node}: {err.str()}"))
            elif fut.result().error_code:
                result.errors.append(KafkaError(fut.result().error_code, f"broker {node}"))
            else:
                for g in fut.result().groups:
                    result.valid.append(ConsumerGroupListing(
                        g.group_id, g.protocol_type == "",
                        ConsumerGroupState.from_broker(getattr(g, "group_state", "") or "")))
            pending["n"] -= 1
            if pending["n"] == 0:
                result.valid.sort(key=lambda g: g.group_id)
                settle_all([out], result)

        for node in nodes:
            fut = client.send(node, versioned(m.ListGroupsRequest, m.ListGroupsRequest),
                              timeout_ms=ms)
            fut.add_done_callback(lambda f, n=node: answered(n, f))

    client.request_metadata().add_done_callback(ask)
    return out


def group_offsets(client: KafkaClient, request: ConsumerGroupTopicPartitions,
                  timeout: float) -> Future:
    """OffsetFetch for one group at its coordinator (retried while the coordinator moves or
    loads); a Future of ConsumerGroupTopicPartitions with the committed offsets."""
    out: Future = Future()
    deadline = time.monotonic() + timeout
    conf = client.config
    backoff = Backoff(conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])
    wanted: dict[str, list[int]] | None = None
    if request.topic_partitions is not None:
        wanted = {}
        for tp in request.topic_partitions:
            wanted.setdefault(tp.topic, []).append(tp.partition)

    def make() -> Any:
        R = m.OffsetFetchRequest
        topics = None if wanted is None else [
            R.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in wanted.items()]
        group_topics = None if wanted is None else [
            R.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
            for t, ps in wanted.items()]
        return R(group_id=request.group_id, topics=topics,
                 groups=[R.OffsetFetchRequestGroup(group_id=request.group_id,
                                                   topics=group_topics)],
                 require_stable=False)

    def retry_or_fail(err: KafkaError) -> None:
        delay = backoff.next_delay()
        if err.code() in _RETRY and time.monotonic() + delay < deadline:
            if err.code() in (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE):
                client.invalidate_coordinator(0, request.group_id)
            client.call_later(delay, attempt)
        else:
            settle_all([out], error=KafkaException(err))

    def answered(fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            if isinstance(exc, KafkaException):
                retry_or_fail(exc.args[0])
            else:
                settle_all([out], error=exc)
            return
        resp = fut.result()
        code, topics = (resp.groups[0].error_code, resp.groups[0].topics) if resp.groups \
            else (resp.error_code, resp.topics)
        if code:
            retry_or_fail(KafkaError(code, f"group {request.group_id}"))
            return
        tps = []
        for t in topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index, p.committed_offset)
                tp.metadata = p.metadata
                if p.error_code:
                    tp.error = KafkaError(p.error_code)
                tps.append(tp)
        tps.sort(key=lambda tp: (tp.topic, tp.partition))
        settle_all([out], ConsumerGroupTopicPartitions(request.group_id, tps))

    def send(coord: Future) -> None:
        exc = coord.exception()
        if exc is not None:
            retry_or_fail(exc.args[0] if isinstance(exc, KafkaException)
                          else KafkaError(KafkaError._FAIL, str(exc)))
            return
        ms = max(1, int((deadline - time.monotonic()) * 1000))
        client.send(coord.result(), versioned(m.OffsetFetchRequest, make),
                    timeout_ms=ms).add_done_callback(answered)

    def attempt() -> None:
        client.coordinator(0, request.group_id).add_done_callback(send)

    attempt()
    return out


