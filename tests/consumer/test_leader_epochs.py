"""Leader epochs on librdkafka's mock cluster: fetch positions are validated with
OffsetForLeaderEpoch after a leader change, log truncation is detected and reported, commits
carry the epoch of the last consumed record.

The mock cluster stamps every batch with the partition's leader epoch and bumps the epoch when
the leader moves, so a position claiming an epoch whose records end before it is exactly what
an unclean leader election leaves behind.
"""

from __future__ import annotations

import time
from contextlib import closing, contextmanager

from consumer_support import produce_confluent
from harness import create_topic, unique_topic

from kafka_fast import Consumer, KafkaError, TopicPartition

OFFSET_FOR_LEADER_EPOCH = 23
FAST = {"group.id": "leader-epochs", "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
        "fetch.error.backoff.ms": 100, "retry.backoff.ms": 50, "retry.backoff.max.ms": 500,
        "enable.auto.commit": False}


def produce_values(cluster, topic: str, tag: str, n: int = 10) -> None:
    produce_confluent(cluster, topic, [
        {"partition": 0, "key": b"k", "value": f"{tag}{i}".encode(), "headers": None,
         "timestamp": 1_700_000_000_000 + i} for i in range(n)])


def two_epochs(cluster) -> tuple[str, int]:
    """A one-partition topic with offsets 0-9 (values a0..a9) written under the first leader
    and 10-19 (b0..b9) under the next one; returns the topic and the current leader epoch."""
    topic = unique_topic("epoch")
    create_topic(cluster, topic, 1)
    produce_values(cluster, topic, "a")
    with closing(Consumer(cluster.client_config({"group.id": "probe"}))) as probe:
        first = probe._client.wait_metadata([topic], 10).topics[topic].partitions[0]
        cluster.set_leader(topic, 0, first.leader % 3 + 1)
        deadline = time.monotonic() + 10
        while True:
            now = probe._client.request_metadata([topic]).result(10).topics[topic].partitions[0]
            if now.leader_epoch > first.leader_epoch or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert now.leader_epoch == first.leader_epoch + 1
    produce_values(cluster, topic, "b")
    return topic, now.leader_epoch


def poll_until(consumer: Consumer, count: int, timeout: float = 20.0) -> tuple[list, list]:
    """Records and errors (EOF aside) polled until ``count`` records arrived."""
    records, errors = [], []
    deadline = time.monotonic() + timeout
    while len(records) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            errors.append(msg.error())
        else:
            records.append((msg.offset(), msg.value(), msg.leader_epoch()))
    return records, errors


@contextmanager
def tracking(cluster):
    """Record the requests the mock cluster receives while the block runs."""
    cluster.start_request_tracking()
    try:
        yield
    finally:
        cluster.stop_request_tracking()


def validations(cluster) -> int:
    """OffsetForLeaderEpoch requests the mock cluster received since tracking started."""
    return sum(1 for r in cluster.requests() if r.api_key == OFFSET_FOR_LEADER_EPOCH)


def later_records(epoch: int, start: int) -> list:
    return [(o, f"b{o - 10}".encode(), epoch) for o in range(start, 20)]


def test_a_position_past_the_end_of_its_epoch_is_truncation(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic, epoch = two_epochs(cluster)
    with closing(Consumer(cluster.client_config(dict(FAST)))) as c:
        # Offset 15 under the first epoch: that epoch ended at offset 10 on the leader.
        c.assign([TopicPartition(topic, 0, 15, leader_epoch=epoch - 1)])
        records, errors = poll_until(c, 10)
        assert [e.code() for e in errors] == [KafkaError._LOG_TRUNCATION]
        assert "truncated at offset 10" in errors[0].str()
        assert "10..14" in errors[0].str() and "resumes at offset 10" in errors[0].str()
        assert records == later_records(epoch, 10)
        assert c.position([TopicPartition(topic, 0)])[0].offset == 20


def test_truncation_stops_the_partition_under_auto_offset_reset_error(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic, epoch = two_epochs(cluster)
    conf = cluster.client_config(dict(FAST, **{"auto.offset.reset": "error"}))
    with closing(Consumer(conf)) as c:
        c.assign([TopicPartition(topic, 0, 15, leader_epoch=epoch - 1)])
        records, errors = poll_until(c, 1, timeout=4.0)
        assert records == []
        assert [e.code() for e in errors] == [KafkaError._LOG_TRUNCATION]
        assert "auto.offset.reset=error" in errors[0].str()
        # The application decides where to go on.
        c.seek(TopicPartition(topic, 0, 12))
        records, errors = poll_until(c, 8)
        assert (records, errors) == (later_records(epoch, 12), [])


def test_a_valid_position_is_checked_once_and_consumed_exactly(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic, epoch = two_epochs(cluster)
    with closing(Consumer(cluster.client_config(dict(FAST)))) as c, tracking(cluster):
        # Offset 7 under the first epoch is still in the leader's log.
        c.assign([TopicPartition(topic, 0, 7, leader_epoch=epoch - 1)])
        records, errors = poll_until(c, 13)
        assert errors == []
        assert records == [(o, f"a{o}".encode(), epoch - 1) for o in (7, 8, 9)] + \
            later_records(epoch, 10)
        assert validations(cluster) == 1


def test_a_leader_move_while_consuming_validates_and_loses_nothing(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("epoch-move")
    create_topic(cluster, topic, 1)
    produce_values(cluster, topic, "a")
    c = Consumer(cluster.client_config(dict(FAST)))
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        first, errors = poll_until(c, 10)
        assert errors == [] and [r[:2] for r in first] == [(o, f"a{o}".encode())
                                                           for o in range(10)]
        old_epoch = first[-1][2]
        cluster.start_request_tracking()
        leader = c._client.cluster.leader(topic, 0)
        cluster.set_leader(topic, 0, leader % 3 + 1)
        produce_values(cluster, topic, "b")
        second, errors = poll_until(c, 10)
        assert errors == []
        assert second == later_records(old_epoch + 1, 10)
        assert validations(cluster) >= 1
        assert c.poll(0.3) is None
    finally:
        cluster.stop_request_tracking()
        c.close()


def test_commits_carry_the_epoch_of_the_last_consumed_record(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic, epoch = two_epochs(cluster)
    group = unique_topic("epoch-group")
    with closing(Consumer(cluster.client_config(dict(FAST, **{"group.id": group})))) as c:
        c.assign([TopicPartition(topic, 0, 0)])
        records, errors = poll_until(c, 20)
        assert errors == [] and [r[0] for r in records] == list(range(20))
        c.commit(asynchronous=False)
        committed = c.committed([TopicPartition(topic, 0)], timeout=10)[0]
        assert (committed.offset, committed.leader_epoch) == (20, epoch)


def test_a_committed_position_is_validated_before_fetching(fresh_mock_cluster):
    """The mock cluster's OffsetFetch answers with the partition's current leader epoch, not
    the committed one, so this shows the validation round trip on the committed position;
    truncation itself is shown by the assign() tests above."""
    cluster = fresh_mock_cluster
    topic, epoch = two_epochs(cluster)
    group = unique_topic("epoch-group")
    conf = cluster.client_config(dict(FAST, **{"group.id": group}))
    with closing(Consumer(conf)) as c:
        c.commit(offsets=[TopicPartition(topic, 0, 16, leader_epoch=epoch)], asynchronous=False)
    with tracking(cluster), closing(Consumer(conf)) as c2:
        c2.assign([TopicPartition(topic, 0)])
        records, errors = poll_until(c2, 4)
        assert (records, errors) == (later_records(epoch, 16), [])
        assert validations(cluster) == 1


def test_brokers_without_the_api_are_fetched_from_unvalidated(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic, epoch = two_epochs(cluster)
    cluster.set_apiversion(OFFSET_FOR_LEADER_EPOCH, -1, -1)
    with closing(Consumer(cluster.client_config(dict(FAST)))) as c:
        c.assign([TopicPartition(topic, 0, 15, leader_epoch=epoch - 1)])
        records, errors = poll_until(c, 5)
        assert (records, errors) == (later_records(epoch, 15), [])
