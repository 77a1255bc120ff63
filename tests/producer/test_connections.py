"""``produce.connections.per.broker``: Produce requests spread over several connections to
one broker, partition p always on connection p % k, every record once and in order."""

from __future__ import annotations

import numpy as np
import pytest
from harness.proc_usage import tcp_connections
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import KafkaError, KafkaException, Producer

PRODUCE = 0  # API key


def test_partitions_spread_over_three_connections_keep_their_order(kafka):
    """Three Produce connections to one broker: idempotent acks=all records of six
    partitions arrive once each, at the offsets their reports give, in production order;
    the process holds at least three connections to the brokers while producing (one
    without the setting)."""
    topic = unique_topic("conns")
    create_topic(kafka, topic, 6)
    with Producer(kafka.client_config()) as probe:
        ports = {b.port for b in probe.list_topics(timeout=30).brokers.values()}
    before = set().union(*tcp_connections(ports).values())
    reports: list[tuple] = []
    want: dict[int, list[bytes]] = {p: [] for p in range(6)}
    with Producer(kafka.client_config({"produce.connections.per.broker": 3, "acks": "all",
                                       "linger.ms": 1, "batch.num.messages": 50})) as p:
        for i in range(6000):
            value = b"%06d" % i
            want[i % 6].append(value)
            p.produce(topic, value, partition=i % 6, on_delivery=lambda e, m: reports.append(
                (e, m.partition(), m.offset(), m.value())))
            if i % 500 == 499:
                p.poll(0)
        assert p.flush(60) == 0
        held = len(set().union(*tcp_connections(ports).values()) - before)
    assert held >= 3, f"{held} connection(s) to the brokers"
    assert [r[0] for r in reports] == [None] * 6000
    for q in range(6):
        mine = [(r[2], r[3]) for r in reports if r[1] == q]
        assert [v for _, v in mine] == want[q]  # reports in production order
        assert [o for o, _ in mine] == list(range(1000))
    got = read_confluent(kafka, topic, 6, 6000, timeout=60)
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (q, o, v) for q in range(6) for o, v in enumerate(want[q])]


def test_produce_batch_over_two_connections(kafka):
    """produce_batch with two connections: each record once, each key in one partition,
    each partition's records in call order."""
    topic = unique_topic("conns-batch")
    create_topic(kafka, topic, 4)
    n = 20_000
    values = np.arange(n, dtype=">u4").view(np.uint8).reshape(n, 4)
    keys = [b"k%d" % (i % 97) for i in range(n)]
    with Producer(kafka.client_config({"produce.connections.per.broker": 2,
                                       "batch.num.messages": 1000})) as p:
        p.list_topics(topic, timeout=30)
        assert p.produce_batch(topic, values, keys=keys) == n
        assert p.flush(60) == 0
    got = read_confluent(kafka, topic, 4, n, timeout=60)
    seen = [int.from_bytes(g.value, "big") for g in got]
    assert sorted(seen) == list(range(n))
    assert len({g.partition for g in got}) == 4
    for q in range(4):
        mine = [g for g in got if g.partition == q]
        assert [g.offset for g in mine] == list(range(len(mine)))
        order = [int.from_bytes(g.value, "big") for g in mine]
        assert order == sorted(order)
    where = {}
    for g in got:
        assert where.setdefault(g.key, g.partition) == g.partition
        assert g.key == b"k%d" % (int.from_bytes(g.value, "big") % 97)


def test_injected_errors_on_two_connections_are_retried_in_order(fresh_mock_cluster):
    """Retriable Produce errors while each broker has two Produce connections: every record
    exactly once and in order per partition (librdkafka's mock cluster, 3 brokers)."""
    cluster = fresh_mock_cluster
    topic = unique_topic("conns-inject")
    create_topic(cluster, topic, 4, replication_factor=3)
    conf = cluster.client_config({"acks": "all", "retry.backoff.ms": 10,
                                  "produce.connections.per.broker": 2})
    reports = []
    want: dict[int, list[bytes]] = {p: [] for p in range(4)}
    with Producer(conf) as p:
        assert p.list_topics(topic, 10).topics[topic].error is None
        cluster.push_errors(PRODUCE, [KafkaError.NOT_LEADER_OR_FOLLOWER,
                                      KafkaError.REQUEST_TIMED_OUT,
                                      KafkaError.NOT_ENOUGH_REPLICAS] * 2)
        for i in range(400):
            value = b"%09d" % i
            want[i % 4].append(value)
            p.produce(topic, value, partition=i % 4, on_delivery=lambda e, m: reports.append(e))
            if i % 50 == 49:
                p.flush(30)
        assert p.flush(30) == 0
    assert reports == [None] * 400
    got = read_confluent(cluster, topic, 4, 400, timeout=60)
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (q, o, v) for q in range(4) for o, v in enumerate(want[q])]


@pytest.mark.parametrize("value", [0, 5, "two"])
def test_out_of_range_connection_counts_are_refused(value):
    with pytest.raises(KafkaException, match="produce.connections.per.broker"):
        Producer({"bootstrap.servers": "127.0.0.1:9", "produce.connections.per.broker": value})
