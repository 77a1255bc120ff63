"""Offsets: a group's committed offsets (OffsetFetch / OffsetCommit at its coordinator) and
partitions' offsets by time (ListOffsets at each leader), with confluent-kafka's OffsetSpec
and ListOffsetsResultInfo."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ..cluster.coordinators import coordinator_action
from ..errors import KafkaError
from ..net.client import KafkaClient
from ..protocol import messages as m
from ..protocol.versioned import versioned
from ..topic_partition import OFFSET_INVALID, TopicPartition
from .calls import LEADER_CODES, AdminCall, coordinator_call, error_of
from .model import ConsumerGroupTopicPartitions, IsolationLevel

OFFSET_SPEC_LATEST = -1
OFFSET_SPEC_EARLIEST = -2
OFFSET_SPEC_MAX_TIMESTAMP = -3


# -- committed offsets ---------------------------------------------------------------------

def _by_topic(tps: list[TopicPartition]) -> dict[str, list[TopicPartition]]:
    out: dict[str, list[TopicPartition]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp)
    return out


def committed_offsets(client: KafkaClient, request: ConsumerGroupTopicPartitions,
                      require_stable: bool, timeout: float) -> Future:
    """OffsetFetch at the group's coordinator; a Future of ConsumerGroupTopicPartitions
    (partitions without a committed offset have OFFSET_INVALID)."""
    group = request.group_id
    wanted = None if request.topic_partitions is None else {
        t: [tp.partition for tp in tps]
        for t, tps in _by_topic(request.topic_partitions).items()}

    def make() -> Any:
        R = m.OffsetFetchRequest
        topics = None if wanted is None else [
            R.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in wanted.items()]
        group_topics = None if wanted is None else [
            R.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
            for t, ps in wanted.items()]
        return R(group_id=group, topics=topics,
                 groups=[R.OffsetFetchRequestGroup(group_id=group, topics=group_topics)],
                 require_stable=require_stable)

    def parse(resp: Any, _node: int) -> Any:
        code, topics = (resp.groups[0].error_code, resp.groups[0].topics) if resp.groups \
            else (resp.error_code, resp.topics)
        if code:
            return KafkaError.of(code, f"group {group}")
        tps = []
        for t in topics:
            for p in t.partitions:
                offset = p.committed_offset if p.committed_offset >= 0 else OFFSET_INVALID
                epoch = getattr(p, "committed_leader_epoch", -1)
                tps.append(TopicPartition(t.name, p.partition_index, offset, p.metadata,
                                          epoch if epoch >= 0 else None,
                                          error_of(p.error_code)))
        tps.sort(key=lambda tp: (tp.topic, tp.partition))
        return ConsumerGroupTopicPartitions(group, tps)

    return coordinator_call(client, group, lambda: versioned(m.OffsetFetchRequest, make),
                            parse, timeout)


def commit_offsets(client: KafkaClient, request: ConsumerGroupTopicPartitions,
                   timeout: float) -> Future:
    """OffsetCommit outside any generation (as an admin does) at the group's coordinator; a
    Future of ConsumerGroupTopicPartitions with each partition's error (None: committed).
    A group with active members answers UNKNOWN_MEMBER_ID for its partitions."""
    group = request.group_id
    tps = list(request.topic_partitions or [])
    R = m.OffsetCommitRequest
    Topic = R.OffsetCommitRequestTopic
    Partition = R.OffsetCommitRequestTopic.OffsetCommitRequestPartition

    def make() -> Any:
        return R(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                 group_instance_id=None, retention_time_ms=-1, topics=[
                     Topic(name=t, partitions=[Partition(
                         partition_index=tp.partition, committed_offset=tp.offset,
                         committed_leader_epoch=-1 if tp.leader_epoch is None
                         else tp.leader_epoch,
                         committed_metadata=tp.metadata)
                         for tp in ps]) for t, ps in _by_topic(tps).items()])

    def parse(resp: Any, _node: int) -> Any:
        errors = {(t.name, p.partition_index): p.error_code
                  for t in resp.topics for p in t.partitions}
        for code in errors.values():
            if coordinator_action(code) is not None:
                return KafkaError.of(code, f"group {group}")
        out = [TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata, tp.leader_epoch,
                              error_of(errors.get((tp.topic, tp.partition),
                                                  KafkaError._BAD_MSG)))
               for tp in tps]
        return ConsumerGroupTopicPartitions(group, out)

    return coordinator_call(client, group, lambda: versioned(R, make), parse, timeout)


# -- offsets by time -------------------------------------------------------------------------

class OffsetSpec:
    """What ``list_offsets`` looks up in a partition: ``OffsetSpec.earliest()``,
    ``latest()``, ``max_timestamp()`` or ``for_timestamp(ms)``. ``OffsetSpec(n)`` gives the
    spec for a protocol value (-1 latest, -2 earliest, -3 max timestamp, n >= 0 a time)."""

    _value: int

    def __new__(cls, index: int) -> OffsetSpec:
        if cls is not OffsetSpec:
            return object.__new__(cls)
        if index < 0:
            try:
                return _SPECS[index]
            except KeyError:
                raise ValueError(f"no OffsetSpec for {index}") from None
        return TimestampSpec(index)

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return _SPECS[OFFSET_SPEC_EARLIEST]

    @classmethod
    def latest(cls) -> OffsetSpec:
        return _SPECS[OFFSET_SPEC_LATEST]

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return _SPECS[OFFSET_SPEC_MAX_TIMESTAMP]

    @classmethod
    def for_timestamp(cls, timestamp: int) -> OffsetSpec:
        return TimestampSpec(timestamp)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, OffsetSpec):
            return NotImplemented
        return self._value < other._value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._value})"


class TimestampSpec(OffsetSpec):
    """The first offset whose timestamp is at or after ``timestamp`` (milliseconds)."""

    def __init__(self, timestamp: int) -> None:
        self.timestamp = timestamp
        self._value = int(timestamp)


class MaxTimestampSpec(OffsetSpec):
    """The offset of the record with the largest timestamp."""

    def __init__(self, _: int = OFFSET_SPEC_MAX_TIMESTAMP) -> None:
        self._value = OFFSET_SPEC_MAX_TIMESTAMP


class LatestSpec(OffsetSpec):
    """The end of the partition (the offset the next record gets)."""

    def __init__(self, _: int = OFFSET_SPEC_LATEST) -> None:
        self._value = OFFSET_SPEC_LATEST


class EarliestSpec(OffsetSpec):
    """The first offset still in the partition."""

    def __init__(self, _: int = OFFSET_SPEC_EARLIEST) -> None:
        self._value = OFFSET_SPEC_EARLIEST


_SPECS: dict[int, OffsetSpec] = {
    OFFSET_SPEC_LATEST: LatestSpec(OFFSET_SPEC_LATEST),
    OFFSET_SPEC_EARLIEST: EarliestSpec(OFFSET_SPEC_EARLIEST),
    OFFSET_SPEC_MAX_TIMESTAMP: MaxTimestampSpec(OFFSET_SPEC_MAX_TIMESTAMP),
}


class ListOffsetsResultInfo:
    """One partition's answer: ``offset``, ``timestamp`` (-1 for earliest/latest) and
    ``leader_epoch`` (None when the broker gave none)."""

    def __init__(self, offset: int, timestamp: int, leader_epoch: int) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch: int | None = leader_epoch if leader_epoch >= 0 else None

    def __repr__(self) -> str:
        return (f"ListOffsetsResultInfo(offset={self.offset}, timestamp={self.timestamp}, "
                f"leader_epoch={self.leader_epoch})")


def partition_target(client: KafkaClient, tp: TopicPartition) -> Any:
    """The leader of ``tp`` in the latest metadata, or the KafkaError that says why not."""
    info = client.cluster.topics.get(tp.topic)
    if info is None or info.error is not None:
        return info.error if info is not None else KafkaError.of(KafkaError.UNKNOWN_TOPIC_OR_PART)
    p = info.partitions.get(tp.partition)
    if p is None:
        return KafkaError.of(KafkaError._UNKNOWN_PARTITION,
                          f"{tp.topic} has no partition {tp.partition}")
    if p.leader < 0:
        return KafkaError.of(KafkaError.LEADER_NOT_AVAILABLE, f"{tp.topic} [{tp.partition}]")
    return p.leader


def list_offsets(client: KafkaClient, specs: dict[TopicPartition, OffsetSpec],
                 isolation_level: IsolationLevel, timeout: float
                 ) -> dict[TopicPartition, Future]:
    """ListOffsets at each partition's leader; ``{TopicPartition(topic, partition, spec):
    Future of ListOffsetsResultInfo}``."""
    items = [TopicPartition(tp.topic, int(tp.partition), spec._value)
             for tp, spec in specs.items()]
    R = m.ListOffsetsRequest
    ms = max(1, int(timeout * 1000))

    def build(group: list[TopicPartition]) -> Any:
        def make() -> Any:
            return R(replica_id=-1, isolation_level=isolation_level.value, timeout_ms=ms,
                     topics=[R.ListOffsetsTopic(name=t, partitions=[
                         R.ListOffsetsTopic.ListOffsetsPartition(
                             partition_index=tp.partition, current_leader_epoch=-1,
                             timestamp=tp.offset) for tp in tps])
                         for t, tps in _by_topic(group).items()])
        return versioned(R, make)

    def parse(resp: Any, _: list[TopicPartition]) -> dict[TopicPartition, Any]:
        return {TopicPartition(t.name, p.partition_index):
                error_of(p.error_code) or ListOffsetsResultInfo(
                    p.offset, p.timestamp, getattr(p, "leader_epoch", -1))
                for t in resp.topics for p in t.partitions}

    return AdminCall(client, items, build, parse, lambda tp: partition_target(client, tp),
                     timeout, topics=sorted({tp.topic for tp in items}),
                     refresh_codes=LEADER_CODES).start()


# -- argument checks (confluent-kafka's, with its exception types) ---------------------------

def check_group_requests(requests: Any, altering: bool) -> list[ConsumerGroupTopicPartitions]:
    """Check ``list_consumer_group_offsets`` / ``alter_consumer_group_offsets`` requests:
    TypeError or ValueError naming what is wrong. Several groups may be asked at once."""
    if requests is None:
        raise TypeError("request cannot be None")
    if not isinstance(requests, list):
        raise TypeError("request must be a list")
    if not requests:
        raise ValueError("Expected at least one ConsumerGroupTopicPartitions")
    for req in requests:
        if not isinstance(req, ConsumerGroupTopicPartitions):
            raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
        if req.group_id is None:
            raise TypeError("'group_id' cannot be None")
        if not isinstance(req.group_id, str):
            raise TypeError("'group_id' must be a string")
        if not req.group_id:
            raise ValueError("'group_id' cannot be empty")
        tps = req.topic_partitions
        if tps is None:
            if altering:
                raise ValueError("'topic_partitions' cannot be null")
            continue
        if not isinstance(tps, list):
            raise TypeError("'topic_partitions' must be a list" + ("" if altering else " or None"))
        if not tps:
            raise ValueError("'topic_partitions' cannot be empty")
        for tp in tps:
            _check_partition(tp, "topic_partitions")
            if altering and tp.offset < 0:
                raise ValueError("Element of 'topic_partitions' must not have negative value "
                                 "for 'offset' field")
            if not altering and tp.offset != OFFSET_INVALID:
                raise ValueError("Element of 'topic_partitions' must not have 'offset' value")
        if len({(tp.topic, tp.partition) for tp in tps}) != len(tps):
            raise ValueError(f"Duplicate partitions for group {req.group_id!r}")
    groups = [req.group_id for req in requests]
    if len(set(groups)) != len(groups):
        raise ValueError("Duplicate group ids in the request")
    return requests


def _check_partition(tp: Any, what: str) -> None:
    if tp is None:
        raise ValueError(f"Element of '{what}' cannot be None")
    if not isinstance(tp, TopicPartition):
        raise TypeError(f"Element of '{what}' must be of type TopicPartition")
    if not tp.topic:
        raise ValueError(f"Element of '{what}' must not have 'topic' attribute as Empty")
    if tp.partition < 0:
        raise ValueError(f"Element of '{what}' must not have negative 'partition' value")


def check_offset_specs(specs: Any, isolation_level: Any) -> None:
    """Check ``list_offsets`` arguments as confluent-kafka does."""
    if not isinstance(specs, dict):
        raise TypeError("Expected topic_partition_offsets to be dict of "
                        "[TopicPartitions,OffsetSpec] for list offsets request")
    for tp, spec in specs.items():
        if tp is None:
            raise TypeError("partition cannot be None")
        if not isinstance(tp, TopicPartition):
            raise TypeError("partition must be a TopicPartition")
        if not tp.topic:
            raise ValueError("partition topic name cannot be empty")
        if tp.partition < 0:
            raise ValueError("partition index must be non-negative")
        if spec is None:
            raise TypeError("OffsetSpec cannot be None")
        if not isinstance(spec, OffsetSpec):
            raise TypeError("Value must be a OffsetSpec")
    if isolation_level is not None and not isinstance(isolation_level, IsolationLevel):
        raise TypeError("isolation_level argument should be an IsolationLevel")


def check_partitions(partitions: Any, what: str) -> list[TopicPartition]:
    """A list of TopicPartition with partitions >= 0, each once (``delete_records``,
    ``elect_leaders``)."""
    if not isinstance(partitions, list):
        raise TypeError(f"Expected '{what}' to be a list, got '{type(partitions).__name__}'")
    for tp in partitions:
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"Element of the '{what}' list must be of type 'TopicPartition' "
                            f"got '{type(tp).__name__}'")
        if tp.partition < 0:
            raise ValueError(f"Elements of the '{what}' list must not have negative value "
                             "for 'partition' field")
    if len(set(partitions)) != len(partitions):
        raise ValueError(f"Duplicate partitions in '{what}'")
    return partitions
