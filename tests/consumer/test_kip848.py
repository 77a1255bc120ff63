"""The next-generation group protocol (group.protocol=consumer, ConsumerGroupHeartbeat) on the
mock cluster, which implements it; Tansu does not, which must surface as an error."""

from __future__ import annotations

import time

from consumer_support import as_tuple, make_items, produce_confluent, read_all, wait_for
from harness import create_topic, unique_topic

from kafka_fast import Consumer, TopicPartition

CONSUMER_GROUP_HEARTBEAT = 68
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, FENCED_MEMBER_EPOCH = 16, 14, 110
CONF = {"group.protocol": "consumer", "auto.offset.reset": "earliest",
        "enable.auto.commit": False, "fetch.wait.max.ms": 100, "retry.backoff.ms": 50}


class Tracker:
    def __init__(self) -> None:
        self.events: list[tuple[str, list[int]]] = []

    def kwargs(self) -> dict:
        return {
            "on_assign": lambda c, ps: self.events.append(
                ("assign", sorted(p.partition for p in ps))),
            "on_revoke": lambda c, ps: self.events.append(
                ("revoke", sorted(p.partition for p in ps))),
            "on_lost": lambda c, ps: self.events.append(
                ("lost", sorted(p.partition for p in ps))),
        }


def owned(c) -> list[int]:
    return sorted(tp.partition for tp in c.assignment())


def poll_all(*consumers):
    def run():
        for c in consumers:
            msg = c.poll(0.05)
            assert msg is None or msg.error() is None, msg.error()
    return run


def test_members_share_partitions_and_commit_with_member_epochs(mock_cluster):
    topic = unique_topic("kip848")
    create_topic(mock_cluster, topic, 6)
    expected = produce_confluent(mock_cluster, topic, make_items(60, 6))
    group = unique_topic("g")
    ta, tb = Tracker(), Tracker()
    a = Consumer(mock_cluster.client_config(dict(CONF, **{"group.id": group})))
    b = Consumer(mock_cluster.client_config(dict(CONF, **{"group.id": group})))
    try:
        a.subscribe([topic], **ta.kwargs())
        got = read_all(a, 60)
        assert sorted(as_tuple(m) for m in got) == expected
        assert owned(a) == list(range(6))
        committed = a.commit(asynchronous=False)
        assert sorted((tp.partition, tp.offset) for tp in committed) == [(p, 10) for p in range(6)]
        assert a.consumer_group_metadata().generation_id > 0
        b.subscribe([topic], **tb.kwargs())
        wait_for(lambda: len(owned(a)) == 3 and len(owned(b)) == 3, 30, poll_all(a, b),
                 "3/3 split")
        moved = owned(b)
        # Only the partitions b got were taken from a.
        assert [p for kind, p in ta.events if kind == "revoke"] == [moved]
        assert [p for kind, p in tb.events if kind == "assign" and p] == [moved]
        # b starts from a's commits: nothing to read.
        assert read_all(b, 1, timeout=1.5) == []
        b.close()
        wait_for(lambda: owned(a) == list(range(6)), 30, poll_all(a), "all back to a")
    finally:
        a.close()
        b.close()


def test_heartbeat_errors_are_recovered(mock_cluster):
    topic = unique_topic("kip848e")
    create_topic(mock_cluster, topic, 2)
    group = unique_topic("g")
    tracker = Tracker()
    mock_cluster.push_errors(CONSUMER_GROUP_HEARTBEAT,
                             [COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR])
    c = Consumer(mock_cluster.client_config(dict(CONF, **{"group.id": group})))
    try:
        c.subscribe([topic], **tracker.kwargs())
        wait_for(lambda: owned(c) == [0, 1], 20, poll_all(c), "assignment after errors")
        # A fenced epoch loses the partitions and joins again with epoch 0.
        mock_cluster.push_errors(CONSUMER_GROUP_HEARTBEAT, [FENCED_MEMBER_EPOCH])
        c._client.call_soon(c._group._heartbeat_now)
        wait_for(lambda: any(kind == "lost" for kind, _ in tracker.events), 20, poll_all(c),
                 "assignment lost")
        wait_for(lambda: owned(c) == [0, 1], 20, poll_all(c), "assignment back")
        assert tracker.events[-1] == ("assign", [0, 1])
    finally:
        c.close()


def test_unsupported_broker_reports_an_error(tansu):
    topic = unique_topic("kip848u")
    create_topic(tansu, topic, 1)
    c = Consumer(tansu.client_config(dict(CONF, **{"group.id": unique_topic("g")})))
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 15
        err = None
        while err is None and time.monotonic() < deadline:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is not None:
                err = msg.error()
        assert err is not None and "group.protocol=consumer" in err.str()
        assert c.assignment() == []
        assert c.position([TopicPartition(topic, 0)])[0].offset < 0
    finally:
        c.close()
