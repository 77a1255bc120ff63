"""Consumer groups on real brokers: assignors, hand-over on close, resuming from commits,
cooperative rebalancing and static membership."""

from __future__ import annotations

import time

import pytest
from consumer_support import as_tuple, make_items, produce_confluent, read_all, wait_for
from harness import create_topic, unique_topic

from kafka_fast import Consumer

FAST = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100}


def member(broker, group, **extra) -> Consumer:
    conf = broker.client_config(dict(FAST, **{"group.id": group}))
    conf.update(extra)
    return Consumer(conf)


class Tracker:
    """Records rebalance callbacks of one member."""

    def __init__(self) -> None:
        self.events: list[tuple[str, list[int]]] = []

    def assign(self, consumer, parts):
        self.events.append(("assign", sorted(p.partition for p in parts)))

    def revoke(self, consumer, parts):
        self.events.append(("revoke", sorted(p.partition for p in parts)))

    def kwargs(self) -> dict:
        return {"on_assign": self.assign, "on_revoke": self.revoke}


def owned(consumer) -> list[int]:
    return sorted(tp.partition for tp in consumer.assignment())


def poll_all(*consumers):
    def run():
        for c in consumers:
            msg = c.poll(0.05)
            assert msg is None or msg.error() is None or msg.error().code() == -191, msg.error()
    return run


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_two_members_split_six_partitions_and_one_takes_all_on_close(mock_cluster, strategy):
    topic = unique_topic("grp")
    create_topic(mock_cluster, topic, 6)
    group = unique_topic("g")
    extra = {"partition.assignment.strategy": strategy}
    a, b = member(mock_cluster, group, **extra), member(mock_cluster, group, **extra)
    try:
        a.subscribe([topic])
        wait_for(lambda: owned(a) == list(range(6)), 30, poll_all(a), "first member owns all")
        b.subscribe([topic])
        wait_for(lambda: len(owned(a)) == 3 and len(owned(b)) == 3, 40, poll_all(a, b),
                 "3/3 split")
        assert sorted(owned(a) + owned(b)) == list(range(6))
        b.close()
        wait_for(lambda: owned(a) == list(range(6)), 40, poll_all(a), "all back to a")
    finally:
        a.close()
        b.close()


def test_new_member_resumes_from_committed_offsets(broker):
    topic = unique_topic("resume")
    create_topic(broker, topic, 2)
    expected = produce_confluent(broker, topic, make_items(80, 2))
    group = unique_topic("g")
    first = member(broker, group, **{"enable.auto.commit": False})
    processed = []
    try:
        first.subscribe([topic])
        while len(processed) < 40:
            for msg in read_all(first, 1, timeout=20):
                processed.append(msg)
                if len(processed) % 10 == 0:
                    first.commit(asynchronous=False)
        # Ten of these were processed after the last commit: they are read again.
        extra = processed[40:]
        for msg in first.consume(10, 0.2):
            extra.append(msg)
    finally:
        first.close()
    committed_upto = processed[:40]
    second = member(broker, group, **{"enable.auto.commit": False})
    try:
        second.subscribe([topic])
        rest = read_all(second, len(expected) - len(committed_upto))
        got = sorted(as_tuple(m) for m in committed_upto + rest)
        assert got == expected
        assert second.poll(0.5) is None
    finally:
        second.close()


def test_cooperative_sticky_moves_only_what_must_move(broker):
    topic = unique_topic("coop")
    create_topic(broker, topic, 6)
    group = unique_topic("g")
    extra = {"partition.assignment.strategy": "cooperative-sticky"}
    ta, tb = Tracker(), Tracker()
    a, b = member(broker, group, **extra), member(broker, group, **extra)
    try:
        a.subscribe([topic], **ta.kwargs())
        wait_for(lambda: owned(a) == list(range(6)), 30, poll_all(a), "a owns all")
        b.subscribe([topic], **tb.kwargs())
        wait_for(lambda: len(owned(a)) == 3 and len(owned(b)) == 3, 40, poll_all(a, b),
                 "3/3 split")
        kept = owned(a)
        moved = owned(b)
        # a gave up exactly the partitions b now has, and nothing else, in one revocation.
        revokes = [parts for kind, parts in ta.events if kind == "revoke" and parts]
        assert revokes == [moved]
        assert ("assign", list(range(6))) in ta.events
        assert all(not (set(parts) & set(kept)) for kind, parts in ta.events
                   if kind == "revoke")
        assert [parts for kind, parts in tb.events if kind == "assign" and parts] == [moved]
    finally:
        a.close()
        b.close()


def test_static_member_keeps_its_identity_across_a_restart(mock_cluster):
    """A static member leaves no LeaveGroup behind on close (the coordinator keeps its slot
    for session.timeout.ms) and, restarted with the same group.instance.id, is given the
    same partitions. (Neither test broker implements KIP-345's rebalance-free rejoin, so the
    absence of a rebalance itself cannot be observed here.)"""
    topic = unique_topic("static")
    create_topic(mock_cluster, topic, 4)
    group = unique_topic("g")
    a = member(mock_cluster, group, **{"group.instance.id": "member-a"})
    b = member(mock_cluster, group, **{"group.instance.id": "member-b"})
    try:
        a.subscribe([topic])
        b.subscribe([topic])
        wait_for(lambda: len(owned(a)) == 2 and len(owned(b)) == 2, 40, poll_all(a, b),
                 "2/2 split")
        # range orders static members by instance id: member-a takes the first half.
        assert owned(a) == [0, 1] and owned(b) == [2, 3]
        mock_cluster.start_request_tracking()
        mock_cluster.clear_requests()
        a.close()
        assert [r for r in mock_cluster.requests() if r.api_key == 13] == []
        again = member(mock_cluster, group, **{"group.instance.id": "member-a"})
        try:
            again.subscribe([topic])
            wait_for(lambda: owned(again) == [0, 1] and owned(b) == [2, 3], 40,
                     poll_all(again, b), "restarted member gets its partitions back")
        finally:
            again.close()
    finally:
        mock_cluster.stop_request_tracking()
        a.close()
        b.close()


def test_member_that_stops_polling_leaves_and_rejoins_on_the_next_poll(real_broker):
    topic = unique_topic("maxpoll")
    create_topic(real_broker, topic, 2)
    tracker = Tracker()
    c = member(real_broker, unique_topic("g"), **{"session.timeout.ms": 2000,
                                            "max.poll.interval.ms": 2000})
    try:
        c.subscribe([topic], **tracker.kwargs())
        wait_for(lambda: owned(c) == [0, 1], 30, lambda: c.poll(0.05), "assignment")
        time.sleep(3.0)  # longer than max.poll.interval.ms without a poll
        msg = c.poll(0.1)
        assert msg is not None and msg.error() is not None
        assert msg.error().code() == -147  # _MAX_POLL_EXCEEDED
        wait_for(lambda: owned(c) == [0, 1] and tracker.events[-1] == ("assign", [0, 1]),
                 30, lambda: c.poll(0.05), "rejoined")
        assert ("revoke", [0, 1]) in tracker.events
    finally:
        c.close()
