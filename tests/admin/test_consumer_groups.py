"""AdminClient consumer-group calls on real brokers, against offsets committed by
confluent-kafka and the groups confluent-kafka's AdminClient lists."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer as ReferenceConsumer
from confluent_kafka import TopicPartition as RefTP
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from harness import create_topic, unique_topic

from kafka_fast import OFFSET_INVALID, TopicPartition
from kafka_fast.admin import AdminClient, ConsumerGroupTopicPartitions
from kafka_fast.errors import KafkaError

pytestmark = pytest.mark.timeout(90)


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
    theirs = ReferenceAdmin(broker.client_config()).list_consumer_groups(
        request_timeout=20).result(30)
    assert group in ours
    # confluent-kafka 2.16 lists no groups on Tansu; whatever it lists is listed here too.
    assert {g.group_id for g in theirs.valid} <= ours
