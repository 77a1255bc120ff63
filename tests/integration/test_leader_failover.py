"""A leader's broker goes down and leadership moves (3-broker mock cluster; Tansu has one
broker and cannot move leaders): the producer and the consumer follow the new leader."""

from __future__ import annotations

import time

from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import Consumer, Producer, TopicPartition

PARTITIONS = 3
FAST = {"retry.backoff.ms": 50, "retry.backoff.max.ms": 200, "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 1000}


def _leaders_on_each_broker(cluster, topic: str) -> None:
    create_topic(cluster, topic, PARTITIONS, replication_factor=3)
    for q in range(PARTITIONS):
        cluster.set_leader(topic, q, q + 1)


def _down_then_move(cluster, topic: str) -> None:
    """Broker 2 goes down; once clients have seen it fail (and refreshed metadata that still
    names it), partition 1's leadership moves to broker 3."""
    cluster.broker_down(2)
    time.sleep(1.0)
    cluster.set_leader(topic, 1, 3)


def _produce(p: Producer, topic: str, tag: str, count: int, reports: dict) -> dict:
    want: dict[int, list[bytes]] = {q: [] for q in range(PARTITIONS)}

    def report(err, msg):
        reports.setdefault(msg.value(), []).append((err, msg.partition()))

    for i in range(count):
        v = b"%s-%05d" % (tag.encode(), i)
        want[i % PARTITIONS].append(v)
        p.produce(topic, v, partition=i % PARTITIONS, on_delivery=report)
    return want


def test_producer_follows_a_leader_that_moved_off_a_dead_broker(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("failover")
    _leaders_on_each_broker(cluster, topic)
    reports: dict = {}
    conf = cluster.client_config({"linger.ms": 5, "message.timeout.ms": 30000, **FAST})
    with Producer(conf) as p:
        before = _produce(p, topic, "a", 300, reports)
        assert p.flush(15) == 0
        _down_then_move(cluster, topic)
        start = time.monotonic()
        after = _produce(p, topic, "b", 600, reports)
        assert p.flush(20) == 0
        elapsed = time.monotonic() - start
    assert len(reports) == 900
    assert all(r == [(None, int(v[2:]) % PARTITIONS)] for v, r in reports.items()), \
        [r for r in reports.values() if r[0][0] is not None][:3]
    # Far below message.timeout.ms: the records were re-routed, not left to expire.
    assert elapsed < 15
    got = read_confluent(cluster, topic, PARTITIONS, 900)
    for q in range(PARTITIONS):
        assert [g.value for g in got if g.partition == q] == before[q] + after[q]


def test_consumer_follows_a_leader_that_moved_off_a_dead_broker(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("failover-c")
    _leaders_on_each_broker(cluster, topic)
    reports: dict = {}
    with Producer(cluster.client_config({"linger.ms": 5})) as p:
        first = _produce(p, topic, "a", 300, reports)
        assert p.flush(15) == 0
    c = Consumer(cluster.client_config({"group.id": unique_topic("g"),
                                        "enable.auto.commit": False,
                                        "fetch.wait.max.ms": 100, **FAST}))
    try:
        c.assign([TopicPartition(topic, q, 0) for q in range(PARTITIONS)])
        got = _read(c, 300, 20)
        _down_then_move(cluster, topic)
        with Producer(cluster.client_config({"linger.ms": 5, **FAST})) as p:
            second = _produce(p, topic, "b", 600, reports)
            assert p.flush(20) == 0
        start = time.monotonic()
        got += _read(c, 600, 20)
        elapsed = time.monotonic() - start
    finally:
        c.close()
    for q in range(PARTITIONS):
        assert [v for part, v in got if part == q] == first[q] + second[q]
    assert elapsed < 15


def _read(c: Consumer, count: int, timeout: float) -> list[tuple[int, bytes]]:
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msg in c.consume(1000, 0.2):
            if msg.error() is None:
                got.append((msg.partition(), msg.value()))
    for msg in c.consume(1000, 0.3):
        if msg.error() is None:
            got.append((msg.partition(), msg.value()))
    return got
