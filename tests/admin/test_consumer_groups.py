"""AdminClient consumer-group calls on real brokers, against offsets committed by
confluent-kafka and the groups confluent-kafka's AdminClient lists."""

from __future__ import annotations

import pytest
from admin_support import admin_for, produce, read, wait_for
from confluent_kafka import Consumer as ReferenceConsumer
from confluent_kafka import ConsumerGroupTopicPartitions as RefGroup
from confluent_kafka import KafkaException as ReferenceException
from confluent_kafka import TopicPartition as RefTP
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from harness import create_topic, unique_topic

from kafka_fast import OFFSET_INVALID, Consumer, TopicPartition
from kafka_fast.admin import (
    AdminClient,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
)
from kafka_fast.errors import KafkaError, KafkaException

pytestmark = pytest.mark.timeout(90)


def error_of(fut) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        fut.result(30)
    return info.value.args[0]


def _commit(broker, group: str, offsets: list[tuple[str, int, int]]) -> None:
    consumer = ReferenceConsumer(broker.client_config({"group.id": group}))
    try:
        consumer.commit(offsets=[RefTP(t, p, o) for t, p, o in offsets], asynchronous=False)
    finally:
        consumer.close()


def test_committed_offsets_of_a_group(broker):
    topic, other, group = unique_topic("grp-a"), unique_topic("grp-b"), unique_topic("g")
    create_topic(broker, topic, 3)
    create_topic(broker, other, 1)
    _commit(broker, group, [(topic, 0, 5), (topic, 2, 7), (other, 0, 1)])
    with AdminClient(broker.client_config()) as admin:
        asked = ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, p) for p in range(3)])
        (fut,) = admin.list_consumer_group_offsets([asked], request_timeout=20).values()
        got = fut.result(30)
        assert got.group_id == group
        assert [(tp.topic, tp.partition, tp.offset) for tp in got.topic_partitions] == [
            (topic, 0, 5), (topic, 1, OFFSET_INVALID), (topic, 2, 7)]
        if broker.kind == "mock":
            return  # the mock cluster answers OffsetFetch for all topics with a null array
        (fut,) = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=20).values()
        every = {(tp.topic, tp.partition, tp.offset) for tp in fut.result(30).topic_partitions}
        assert {(topic, 0, 5), (topic, 2, 7), (other, 0, 1)} <= every


def test_list_consumer_groups(broker):
    group = unique_topic("listed")
    topic = unique_topic("listed-t")
    create_topic(broker, topic, 1)
    _commit(broker, group, [(topic, 0, 3)])
    with AdminClient(broker.client_config()) as admin:
        result = admin.list_consumer_groups(request_timeout=20).result(30)
    if broker.kind == "mock":  # no ListGroups: each broker says so, nothing is invented
        assert result.valid == []
        assert result.errors and {e.code() for e in result.errors} == {
            KafkaError._UNSUPPORTED_FEATURE}
        return
    assert not result.errors
    ours = {g.group_id for g in result.valid}
    reference = ReferenceAdmin(broker.client_config())  # kept: its futures need it
    theirs = reference.list_consumer_groups(request_timeout=20).result(30)
    assert group in ours
    # confluent-kafka 2.16 lists no groups on Tansu; whatever it lists is listed here too.
    assert {g.group_id for g in theirs.valid} <= ours


# -- groups of running consumers, on Apache Kafka --------------------------------------------

def _members_view(description) -> dict:
    """A description as plain data: what both clients must agree on."""
    d = description
    members = sorted(
        (m.member_id, m.client_id, m.host, m.group_instance_id,
         sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions),
         None if m.target_assignment is None else sorted(
             (tp.topic, tp.partition) for tp in m.target_assignment.topic_partitions))
        for m in d.members)
    return {"group_id": d.group_id, "simple": d.is_simple_consumer_group,
            "state": d.state.name, "type": d.type.name, "assignor": d.partition_assignor,
            "coordinator": (d.coordinator.id, d.coordinator.host, d.coordinator.port),
            "members": members,
            "operations": None if d.authorized_operations is None else
            [op.name for op in d.authorized_operations]}


def _poll_until_assigned(consumers: list[Consumer], partitions: int, timeout: float = 30):
    """Poll every consumer until their assignments cover ``partitions`` partitions, each
    consumer having some."""
    def covered():
        owned = [c.assignment() for c in consumers]
        return all(owned) and sum(len(o) for o in owned) == partitions

    wait_for(covered, timeout, "assignment",
             step=lambda: [c.poll(0.05) for c in consumers])


def test_groups_of_running_consumers_are_listed_and_described(apache_kafka):
    topic = unique_topic("desc")
    create_topic(apache_kafka, topic, 4)
    classic, kip848 = unique_topic("classic"), unique_topic("kip848")
    consumers = [Consumer(apache_kafka.client_config({
        "group.id": classic, "client.id": f"member-{i}", "session.timeout.ms": 30000}))
        for i in range(2)]
    consumers.append(Consumer(apache_kafka.client_config({
        "group.id": kip848, "client.id": "member-848", "group.protocol": "consumer"})))
    try:
        for c in consumers:
            c.subscribe([topic])
        _poll_until_assigned(consumers[:2], 4)
        _poll_until_assigned(consumers[2:], 4)
        owned = {f"member-{i}": sorted((tp.topic, tp.partition) for tp in c.assignment())
                 for i, c in enumerate(consumers[:2])}
        with admin_for(apache_kafka) as admin:
            listed = admin.list_consumer_groups(request_timeout=20).result(30)
            ours = {g.group_id: g for g in listed.valid if g.group_id in (classic, kip848)}
            assert {g: (x.state, x.type, x.is_simple_consumer_group) for g, x in ours.items()} \
                == {classic: (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC, False),
                    kip848: (ConsumerGroupState.STABLE, ConsumerGroupType.CONSUMER, False)}
            filtered = admin.list_consumer_groups(
                states={ConsumerGroupState.STABLE}, types={ConsumerGroupType.CONSUMER},
                request_timeout=20).result(30)
            names = {g.group_id for g in filtered.valid}
            assert kip848 in names and classic not in names
            assert all(g.type == ConsumerGroupType.CONSUMER for g in filtered.valid)

            futures = admin.describe_consumer_groups([classic, kip848, "no-such-group"],
                                                     include_authorized_operations=True)
            assert list(futures) == [classic, kip848, "no-such-group"]
            got = {g: _members_view(f.result(30)) for g, f in futures.items()}
        described = got[classic]
        assert described["state"] == "STABLE" and described["type"] == "CLASSIC"
        assert {m[1]: m[4] for m in described["members"]} == owned
        assert sorted(p for m in described["members"] for p in m[4]) == [
            (topic, p) for p in range(4)]
        assert got[kip848]["type"] == "CONSUMER"
        assert [m[1] for m in got[kip848]["members"]] == ["member-848"]
        (m848,) = got[kip848]["members"]
        assert m848[4] == m848[5] == [(topic, p) for p in range(4)]
        assert got["no-such-group"]["state"] == "DEAD"
        assert got["no-such-group"]["members"] == []
        # confluent-kafka describes the same groups the same way.
        reference = ReferenceAdmin(apache_kafka.client_config())  # kept: its futures need it
        theirs = reference.describe_consumer_groups(
            [classic, kip848, "no-such-group"], include_authorized_operations=True)
        assert {g: _members_view(f.result(30)) for g, f in theirs.items()} == got
    finally:
        for c in consumers:
            c.close()


def test_offsets_altered_then_read_by_a_consumer(apache_kafka):
    topic, group = unique_topic("alter"), unique_topic("alter-g")
    create_topic(apache_kafka, topic, 2)
    records = produce(apache_kafka, topic, [(i % 2, f"v{i}".encode(), 1000 + i)
                                            for i in range(10)])
    with admin_for(apache_kafka) as admin:
        asked = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 3),
                                                     TopicPartition(topic, 1, 1)])
        futures = admin.alter_consumer_group_offsets([asked])
        assert list(futures) == [group]
        altered = futures[group].result(30)
        assert altered.group_id == group
        assert [(tp.topic, tp.partition, tp.offset, tp.error)
                for tp in altered.topic_partitions] == [(topic, 0, 3, None), (topic, 1, 1, None)]
        listed = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)])[group].result(30)
        assert [(tp.topic, tp.partition, tp.offset) for tp in listed.topic_partitions] == [
            (topic, 0, 3), (topic, 1, 1)]
    reference = ReferenceAdmin(apache_kafka.client_config())
    theirs = reference.list_consumer_group_offsets([RefGroup(group)])[group].result(30)
    assert sorted((tp.topic, tp.partition, tp.offset) for tp in theirs.topic_partitions) == [
        (topic, 0, 3), (topic, 1, 1)]
    # Several groups in one call (confluent-kafka takes one at a time).
    other = unique_topic("alter-h")
    with admin_for(apache_kafka) as admin:
        both = admin.alter_consumer_group_offsets([
            ConsumerGroupTopicPartitions(other, [TopicPartition(topic, 1, 4)]),
            ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1, 1)])])
        assert list(both) == [other, group]
        assert [f.result(30).group_id for f in both.values()] == [other, group]
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)
                                                    for g in (group, other)])
        assert {g: [(tp.partition, tp.offset) for tp in f.result(30).topic_partitions]
                for g, f in listed.items()} == {group: [(0, 3), (1, 1)], other: [(1, 4)]}
    # A consumer of the group starts where the offsets were set.
    got = read(apache_kafka, topic, 6, {"group.id": group, "auto.offset.reset": "earliest"})
    assert got == [r for r in records if (r[0] == 0 and r[1] >= 3) or (r[0] == 1 and r[1] >= 1)]
    assert len(got) == 6


def test_offsets_of_a_group_with_members_are_not_altered(apache_kafka):
    topic, group = unique_topic("busy"), unique_topic("busy-g")
    create_topic(apache_kafka, topic, 1)
    consumer = Consumer(apache_kafka.client_config({"group.id": group}))
    try:
        consumer.subscribe([topic])
        _poll_until_assigned([consumer], 1)
        with admin_for(apache_kafka) as admin:
            result = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
                group, [TopicPartition(topic, 0, 5)])])[group].result(30)
        (tp,) = result.topic_partitions
        assert (tp.topic, tp.partition, tp.offset) == (topic, 0, 5)
        assert tp.error.code() == KafkaError.UNKNOWN_MEMBER_ID
    finally:
        consumer.close()


def test_delete_consumer_groups(apache_kafka):
    topic = unique_topic("del")
    create_topic(apache_kafka, topic, 1)
    idle, busy = unique_topic("idle"), unique_topic("busy")
    consumer = Consumer(apache_kafka.client_config({"group.id": busy}))
    try:
        consumer.subscribe([topic])
        _poll_until_assigned([consumer], 1)
        with admin_for(apache_kafka) as admin:
            admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
                idle, [TopicPartition(topic, 0, 1)])])[idle].result(30)
            futures = admin.delete_consumer_groups([idle, busy, "no-such-group"])
            assert list(futures) == [idle, busy, "no-such-group"]
            assert futures[idle].result(30) is None
            assert error_of(futures[busy]).code() == KafkaError.NON_EMPTY_GROUP
            assert error_of(futures["no-such-group"]).code() == KafkaError.GROUP_ID_NOT_FOUND
            left = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(
                idle, [TopicPartition(topic, 0)])])[idle].result(30)
            assert [tp.offset for tp in left.topic_partitions] == [OFFSET_INVALID]
            listed = admin.list_consumer_groups().result(30)
            assert idle not in {g.group_id for g in listed.valid}
            assert busy in {g.group_id for g in listed.valid}
    finally:
        consumer.close()


def test_list_groups_as_confluent_kafka_lists_them(apache_kafka):
    topic, group = unique_topic("legacy"), unique_topic("legacy-g")
    create_topic(apache_kafka, topic, 2)
    consumer = ReferenceConsumer(apache_kafka.client_config({"group.id": group,
                                                             "client.id": "legacy-member"}))
    try:
        consumer.subscribe([topic])
        wait_for(lambda: consumer.assignment(), 30, "assignment",
                 step=lambda: consumer.poll(0.1))

        def view(groups):
            return [(g.id, g.state, g.protocol_type, g.protocol, g.broker.id, g.error,
                     [(m.id, m.client_id, m.client_host, bytes(m.metadata),
                       bytes(m.assignment)) for m in g.members]) for g in groups]

        with admin_for(apache_kafka) as admin:
            ours = admin.list_groups(group, timeout=20)
            every = admin.list_groups(timeout=20)
        with pytest.warns(DeprecationWarning):
            theirs = ReferenceAdmin(apache_kafka.client_config()).list_groups(group, timeout=20)
        assert view(ours) == view(theirs)
        assert ours[0].state == "Stable" and ours[0].members[0].client_id == "legacy-member"
        assert group in {g.id for g in every}
    finally:
        consumer.close()


def test_describe_a_group_with_committed_offsets_only(broker):
    """Every peer: a group that only has commits is EMPTY (or DEAD where the peer keeps no
    group state), described as confluent-kafka describes it."""
    topic, group = unique_topic("empty-t"), unique_topic("empty-g")
    create_topic(broker, topic, 1)
    _commit(broker, group, [(topic, 0, 2)])
    with admin_for(broker) as admin:
        fut = admin.describe_consumer_groups([group])[group]
        try:
            ours = _members_view(fut.result(30))
        except KafkaException as exc:
            ours = exc.args[0].code()
    reference = ReferenceAdmin(broker.client_config())
    try:
        theirs = _members_view(reference.describe_consumer_groups([group])[group].result(30))
    except ReferenceException as exc:
        theirs = exc.args[0].code()
    if broker.kind == "kafka":
        assert ours["state"] == "EMPTY" and ours["members"] == []
    assert ours == theirs
