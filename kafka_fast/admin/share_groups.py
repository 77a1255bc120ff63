"""Share groups (KIP-932) for the admin client: describe them (ShareGroupDescribe), and
list, alter and delete their start offsets (DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets), each at the group's coordinator. Results
take the shapes of the consumer-group calls (ConsumerGroupTopicPartitions, TopicPartition
with ``offset``, ``leader_epoch`` and ``error``)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from ..errors import KafkaError, KafkaException
from ..net.client import KafkaClient
from ..net.request import settle_all
from ..protocol import messages as m
from ..topic_partition import OFFSET_INVALID, TopicPartition
from .acls import AclOperation, authorized_operations
from .calls import coordinator_call, error_of
from .groups import MemberAssignment, node_of
from .model import ConsumerGroupState, ConsumerGroupTopicPartitions, Node, to_enum


class ShareMemberDescription:
    """A share-group member: ids, host, rack, epoch, subscription and assigned partitions."""

    def __init__(self, member_id: str, client_id: str, host: str,
                 assignment: MemberAssignment, rack_id: str | None = None,
                 member_epoch: int = -1, subscribed_topic_names: list[str] | None = None
                 ) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.rack_id = rack_id
        self.member_epoch = member_epoch
        self.subscribed_topic_names = subscribed_topic_names or []


class ShareGroupDescription:
    """A described share group: members, assignor, state (``EMPTY``, ``STABLE`` or
    ``DEAD``), epochs, coordinator and (when asked for) the operations allowed on it."""

    def __init__(self, group_id: str, members: list[ShareMemberDescription],
                 partition_assignor: str, state: ConsumerGroupState, coordinator: Node,
                 group_epoch: int = -1, assignment_epoch: int = -1,
                 authorized_operations: Sequence[AclOperation | str | int] | None = None
                 ) -> None:
        self.group_id = group_id
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator
        self.group_epoch = group_epoch
        self.assignment_epoch = assignment_epoch
        self.authorized_operations = ([to_enum(op, AclOperation) for op in
                                       authorized_operations] if authorized_operations
                                      else None)

    def __repr__(self) -> str:
        return (f"ShareGroupDescription({self.group_id!r}, {len(self.members)} members, "
                f"state={self.state})")


def _assignment(a: Any) -> MemberAssignment:
    if a is None:
        return MemberAssignment([])
    return MemberAssignment(sorted(TopicPartition(t.topic_name, p)
                                   for t in a.topic_partitions for p in t.partitions))


def describe_share_group(client: KafkaClient, group_id: str, timeout: float,
                         include_authorized_operations: bool) -> Future:
    """ShareGroupDescribe at the coordinator; a Future of ShareGroupDescription (an unknown
    group fails with GROUP_ID_NOT_FOUND)."""
    ops = include_authorized_operations

    def parse(resp: Any, node: int) -> Any:
        (g,) = resp.groups
        err = error_of(g.error_code, g.error_message)
        if err is not None:
            return err
        members = [ShareMemberDescription(
            x.member_id, x.client_id, x.client_host, _assignment(x.assignment), x.rack_id,
            x.member_epoch, list(x.subscribed_topic_names)) for x in g.members]
        return ShareGroupDescription(
            g.group_id, members, g.assignor_name, ConsumerGroupState.from_broker(g.group_state),
            node_of(client, node), g.group_epoch, g.assignment_epoch,
            authorized_operations(g.authorized_operations) if ops else None)

    return coordinator_call(
        client, group_id,
        lambda: m.ShareGroupDescribeRequest(group_ids=[group_id],
                                            include_authorized_operations=ops),
        parse, timeout)


def _by_topic(tps: list[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


def share_group_offsets(client: KafkaClient, request: ConsumerGroupTopicPartitions,
                        timeout: float) -> Future:
    """DescribeShareGroupOffsets at the coordinator; a Future of
    ConsumerGroupTopicPartitions whose partitions carry the share-partition start offset
    (OFFSET_INVALID when the group has none there) and leader epoch."""
    group = request.group_id
    R = m.DescribeShareGroupOffsetsRequest
    wanted = None if request.topic_partitions is None else _by_topic(request.topic_partitions)

    def make() -> Any:
        topics = None if wanted is None else [
            R.DescribeShareGroupOffsetsRequestTopic(topic_name=t, partitions=ps)
            for t, ps in wanted.items()]
        return R(groups=[R.DescribeShareGroupOffsetsRequestGroup(group_id=group,
                                                                 topics=topics)])

    def parse(resp: Any, _node: int) -> Any:
        (g,) = resp.groups
        err = error_of(g.error_code, g.error_message)
        if err is not None:
            return err
        tps = [TopicPartition(t.topic_name, p.partition_index,
                              p.start_offset if p.start_offset >= 0 else OFFSET_INVALID,
                              None, p.leader_epoch if p.leader_epoch >= 0 else None,
                              error_of(p.error_code, p.error_message))
               for t in g.topics for p in t.partitions]
        tps.sort(key=lambda tp: (tp.topic, tp.partition))
        return ConsumerGroupTopicPartitions(group, tps)

    return coordinator_call(client, group, make, parse, timeout)


def alter_share_group_offsets(client: KafkaClient, request: ConsumerGroupTopicPartitions,
                              timeout: float) -> Future:
    """AlterShareGroupOffsets (the group must have no members); a Future of
    ConsumerGroupTopicPartitions with each partition's error (None: its start offset is
    now ``offset``)."""
    group = request.group_id
    tps = list(request.topic_partitions or [])
    R = m.AlterShareGroupOffsetsRequest

    def make() -> Any:
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp)
        return R(group_id=group, topics=[R.AlterShareGroupOffsetsRequestTopic(
            topic_name=t, partitions=[R.AlterShareGroupOffsetsRequestPartition(
                partition_index=tp.partition, start_offset=tp.offset) for tp in ps])
            for t, ps in by_topic.items()])

    def parse(resp: Any, _node: int) -> Any:
        err = error_of(resp.error_code, resp.error_message)
        if err is not None:
            return err
        errors = {(t.topic_name, p.partition_index): error_of(p.error_code, p.error_message)
                  for t in resp.responses for p in t.partitions}
        return ConsumerGroupTopicPartitions(group, [
            TopicPartition(tp.topic, tp.partition, tp.offset, None, None,
                           errors.get((tp.topic, tp.partition),
                                      KafkaError.of(KafkaError._BAD_MSG, "partition not answered")))
            for tp in tps])

    return coordinator_call(client, group, make, parse, timeout)


def delete_share_group_offsets(client: KafkaClient, group_id: str, topics: list[str],
                               timeout: float) -> dict[str, Future]:
    """DeleteShareGroupOffsets (the group must have no members): ``{topic: Future of
    None}``, each failing with its topic's error."""
    R = m.DeleteShareGroupOffsetsRequest
    out: dict[str, Future] = {t: Future() for t in topics}

    def parse(resp: Any, _node: int) -> Any:
        err = error_of(resp.error_code, resp.error_message)
        return err if err is not None else {t.topic_name: error_of(t.error_code, t.error_message)
                                            for t in resp.responses}

    def done(f: Future) -> None:
        exc = f.exception()
        answered = {} if exc is not None else f.result()
        for topic, fut in out.items():
            if exc is not None:
                settle_all([fut], error=exc)
                continue
            err = answered.get(topic, KafkaError.of(KafkaError._BAD_MSG, "topic not answered"))
            settle_all([fut], None, None if err is None else KafkaException(err))

    coordinator_call(client, group_id, lambda: R(group_id=group_id, topics=[
        R.DeleteShareGroupOffsetsRequestTopic(topic_name=t) for t in topics]),
        parse, timeout).add_done_callback(done)
    return out
