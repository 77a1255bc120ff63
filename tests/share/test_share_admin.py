"""The admin client's share-group calls on Apache Kafka 4.4: listing and describing share
groups, and listing, altering and deleting their start offsets; beside confluent-kafka's
AdminClient, which has no share-group calls and leaves share groups out of its consumer-group
listing."""

from __future__ import annotations

import time

import pytest
from share_support import new_group, new_topic, poll_until

from kafka_fast import AdminClient, KafkaError, KafkaException, ShareConsumer, TopicPartition
from kafka_fast.admin import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ShareGroupDescription,
)

ck = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")
from confluent_kafka.admin import AdminClient as ConfluentAdmin  # noqa: E402


def _quiet(consumer: ShareConsumer, seconds: float) -> list:
    got: list = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


def _offsets(result: ConsumerGroupTopicPartitions) -> dict[tuple[str, int], int]:
    assert all(tp.error is None for tp in result.topic_partitions)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def test_share_groups_listed_described_and_their_offsets_changed(apache_share_kafka):
    bootstrap = apache_share_kafka.bootstrap
    topic = new_topic(bootstrap, partitions=2, records=6)
    group = new_group(bootstrap)
    theirs = ConfluentAdmin({"bootstrap.servers": bootstrap})
    with AdminClient({"bootstrap.servers": bootstrap}) as admin:
        consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "client.id": "share-admin-test"})
        try:
            consumer.subscribe([topic])
            poll_until(consumer, lambda got: len(got) >= 6)
            # (acceptances of earlier polls went with the next ShareFetch)
            assert set(consumer.commit_sync().values()) <= {None}
            # confluent-kafka's consumer-group listing leaves share groups out; so does ours.
            ours = admin.list_consumer_groups().result(30)
            confluent = theirs.list_consumer_groups().result(30)
            assert group not in {g.group_id for g in ours.valid}
            assert group not in {g.group_id for g in confluent.valid}
            # Described as a consumer group, a share group is unknown (DEAD) to both.
            ours_d = admin.describe_consumer_groups([group])[group].result(30)
            confluent_d = theirs.describe_consumer_groups([group])[group].result(30)
            assert (ours_d.state.name, ours_d.type.name, ours_d.members) == (
                confluent_d.state.name, confluent_d.type.name, confluent_d.members) == (
                "DEAD", "CLASSIC", [])
            listed = admin.list_share_groups().result(30)
            assert listed.errors == []
            (mine,) = [g for g in listed.valid if g.group_id == group]
            assert mine.state == ConsumerGroupState.STABLE
            described = admin.describe_share_groups([group])[group].result(30)
            assert isinstance(described, ShareGroupDescription)
            assert (described.group_id, described.state, described.partition_assignor) == (
                group, ConsumerGroupState.STABLE, "simple")
            assert described.coordinator.id == 1
            (member,) = described.members
            assert (member.client_id, member.subscribed_topic_names) == (
                "share-admin-test", [topic])
            assert member.assignment.topic_partitions == [TopicPartition(topic, 0),
                                                          TopicPartition(topic, 1)]
            # Both partitions have a start offset (Kafka moves it past accepted records
            # lazily, so it may still be 0 here).
            start = _offsets(admin.list_share_group_offsets(
                [ConsumerGroupTopicPartitions(group)])[group].result(30))
            assert set(start) == {(topic, 0), (topic, 1)}
            assert all(0 <= offset <= 3 for offset in start.values()), start
            one = admin.list_share_group_offsets([ConsumerGroupTopicPartitions(
                group, [TopicPartition(topic, 1)])])[group].result(30)
            assert _offsets(one) == {(topic, 1): start[(topic, 1)]}
            # A group with members cannot be changed.
            with pytest.raises(KafkaException) as raised:
                admin.alter_share_group_offsets([ConsumerGroupTopicPartitions(
                    group, [TopicPartition(topic, 0, 1)])])[group].result(30)
            assert raised.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        finally:
            consumer.close()
        assert admin.describe_share_groups([group])[group].result(30).members == []
        altered = admin.alter_share_group_offsets([ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, 0, 1)])])[group].result(30)
        assert [(tp.topic, tp.partition, tp.offset, tp.error)
                for tp in altered.topic_partitions] == [(topic, 0, 1, None)]
        assert _offsets(admin.list_share_group_offsets(
            [ConsumerGroupTopicPartitions(group)])[group].result(30)) == {
            (topic, 0): 1, (topic, 1): start[(topic, 1)]}
        # The records from the new start offset are delivered again.
        with ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group}) as again:
            again.subscribe([topic])
            got = poll_until(again, lambda g: len(g) >= 2)
            got += _quiet(again, 3.0)
            assert sorted((m.partition(), m.offset(), m.value()) for m in got) == [
                (0, 1, b"v2"), (0, 2, b"v4")]
        deleted = admin.delete_share_group_offsets(group, [topic])
        assert {t: f.result(30) for t, f in deleted.items()} == {topic: None}
        assert _offsets(admin.list_share_group_offsets(
            [ConsumerGroupTopicPartitions(group)])[group].result(30)) == {}
        with pytest.raises(KafkaException) as raised:
            admin.describe_share_groups(["no-such-share-group"])["no-such-share-group"].result(30)
        assert raised.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND
        with pytest.raises(ValueError, match="non-empty list of topic names"):
            admin.delete_share_group_offsets(group, [])
