"""Faults injected into librdkafka's mock cluster while consuming: leader moves, coordinator
moves, coordinator errors on OffsetCommit/Heartbeat/JoinGroup, a broker down then up."""

from __future__ import annotations

import time

from consumer_support import as_tuple, make_items, produce_confluent, read_all, wait_for
from harness import create_topic, unique_topic

from kafka_fast import Consumer, TopicPartition

NOT_COORDINATOR = 16
COORDINATOR_LOAD_IN_PROGRESS = 14
OFFSET_COMMIT, JOIN_GROUP, HEARTBEAT = 8, 11, 12

FAST = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
        "enable.auto.commit": False, "retry.backoff.ms": 50, "retry.backoff.max.ms": 500,
        "fetch.error.backoff.ms": 100, "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500}


def leaders(cluster, topic: str) -> dict[int, int]:
    from harness.topics import wait_for_topic

    return wait_for_topic(cluster, topic, len(cluster_partitions(cluster, topic)))


def cluster_partitions(cluster, topic):
    from confluent_kafka.admin import AdminClient

    md = AdminClient(cluster.client_config()).list_topics(topic, timeout=10)
    return md.topics[topic].partitions


def test_leader_moves_mid_consume_are_followed(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("lead")
    create_topic(cluster, topic, 3)
    first = produce_confluent(cluster, topic, make_items(90, 3, "a"))
    c = Consumer(cluster.client_config(dict(FAST, **{"group.id": unique_topic("g")})))
    try:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = read_all(c, 90)
        before = leaders(cluster, topic)
        for p, node in before.items():
            cluster.set_leader(topic, p, node % 3 + 1)
        second = produce_confluent(cluster, topic, make_items(90, 3, "b"))
        got += read_all(c, 90)
        assert sorted(as_tuple(m) for m in got) == sorted(first + second)
        assert leaders(cluster, topic) != before
        assert c.poll(0.3) is None
    finally:
        c.close()


def test_commits_survive_coordinator_errors_and_moves(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("coord")
    create_topic(cluster, topic, 2)
    expected = produce_confluent(cluster, topic, make_items(40, 2))
    group = unique_topic("g")
    # The join itself meets coordinator errors first.
    cluster.push_errors(JOIN_GROUP, [COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR])
    c = Consumer(cluster.client_config(dict(FAST, **{"group.id": group})))
    try:
        c.subscribe([topic])
        got = read_all(c, 20)
        cluster.push_errors(HEARTBEAT, [NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS])
        cluster.push_errors(OFFSET_COMMIT, [NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS])
        committed = c.commit(asynchronous=False)
        want = {}
        for m in got:
            want[m.partition()] = max(want.get(m.partition(), 0), m.offset() + 1)
        assert {tp.partition: tp.offset for tp in committed} == want
        # Move the coordinator to another broker: the next commit finds it again.
        for node in (1, 2, 3):
            cluster.set_coordinator("group", group, node)
            got += read_all(c, 5)
            c.commit(asynchronous=False)
        got += read_all(c, 40 - len(got))
        c.commit(asynchronous=False)
        assert sorted(as_tuple(m) for m in got) == expected
        ends = {}
        for part, offset, *_ in expected:
            ends[part] = offset + 1
        found = c.committed([TopicPartition(topic, p) for p in range(2)], timeout=10)
        assert {tp.partition: tp.offset for tp in found} == ends
        assert len(c.assignment()) == 2
    finally:
        c.close()


def test_broker_down_then_up_every_record_exactly_once(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("bounce")
    create_topic(cluster, topic, 3)
    first = produce_confluent(cluster, topic, make_items(60, 3, "a"))
    group = unique_topic("g")
    processed = []
    c = Consumer(cluster.client_config(dict(FAST, **{"group.id": group})))
    try:
        c.subscribe([topic])
        # Process then commit, batch by batch.
        while len(processed) < 30:
            batch = c.consume(10, 1.0)
            processed += [m for m in batch if m.error() is None]
            if batch:
                c.commit(asynchronous=False)
        node = leaders(cluster, topic)[0]
        cluster.broker_down(node)
        time.sleep(1.0)
        cluster.broker_up(node)
        second = produce_confluent(cluster, topic, make_items(60, 3, "b"))
        deadline = time.monotonic() + 40
        while len(processed) < 120 and time.monotonic() < deadline:
            batch = [m for m in c.consume(10, 1.0) if m.error() is None]
            processed += batch
            if batch:
                while True:
                    try:
                        c.commit(asynchronous=False)
                        break
                    except Exception:  # a commit during the outage is retried
                        time.sleep(0.2)
        assert sorted(as_tuple(m) for m in processed) == sorted(first + second)
    finally:
        c.close()
    # A new member finds nothing left: every commit landed.
    again = Consumer(cluster.client_config(dict(FAST, **{"group.id": group})))
    try:
        again.subscribe([topic])
        wait_for(lambda: len(again.assignment()) == 3, 30, lambda: again.poll(0.1),
                 "assignment")
        assert read_all(again, 1, timeout=2) == []
    finally:
        again.close()
