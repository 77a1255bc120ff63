"""An idempotent producer (acks=all) on librdkafka's 3-broker mock cluster under a seeded,
randomized fault schedule: leader moves, brokers down and up, pushed retriable Produce
errors, response delays, and a refusal while every broker is slow. Every record arrives
exactly once and in order per partition. CHAOS_MOCK_RECORDS sets the number of records
(default 200000).

The mock checks producer sequences only for transactional producers (an idempotent one
gets every batch stored as it arrives, a retried or an overtaking one too), so the producer
has a transactional.id, in transactions of 25000 records. It keeps one request in flight per
connection: after acknowledging a resent duplicate the mock moves its expected sequence to
that batch's end, so when a lost answer (a broker going down) makes a producer resend two
or more stored batches, it stores the second one again. With one request in flight a plain
idempotent producer needs no sequence check to keep order; the pinned test below checks
that kafka_fast sends one Produce request per broker at a time then.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from chaos_run import env_int
from fault_schedule import FaultPlayer, random_schedule
from harness.topics import create_topic, unique_topic
from paced_producer import Pacer, ProducerRun, expected_partitions
from readback import read_confluent
from sequence_check import delivery_problems, read_back

from kafka_fast import KafkaError, Producer

pytestmark = [pytest.mark.chaos, pytest.mark.timeout(300)]

PARTITIONS = 4
DURATION = 8.0
TRANSACTION = 25_000


def test_seeded_faults_on_the_mock_cluster(fresh_mock_cluster, chaos):
    cluster = fresh_mock_cluster
    count = env_int("CHAOS_MOCK_RECORDS", 200_000)
    if count % PARTITIONS:
        raise ValueError(f"CHAOS_MOCK_RECORDS={count}: must be a multiple of {PARTITIONS}")
    topic = unique_topic("chaos-mock")
    create_topic(cluster, topic, PARTITIONS, replication_factor=3)
    faults = random_schedule(chaos.rng, sorted(cluster.brokers), PARTITIONS, DURATION)
    print(f"chaos: {len(faults)} faults planned: {dict(Counter(f.kind for f in faults))}")
    expected = expected_partitions(count, PARTITIONS)
    conf = cluster.client_config({
        "acks": "all", "enable.idempotence": True, "linger.ms": 5,
        "max.in.flight.requests.per.connection": 1, "transactional.id": f"tid-{topic}",
        "queue.buffering.max.messages": 1_000_000})
    # All records within the schedule's first 90%: the last faults meet the last records.
    producer = ProducerRun(conf, topic, PARTITIONS, count, Pacer(count, 1, DURATION * 0.9),
                           transaction_size=TRANSACTION)
    player = FaultPlayer(cluster, topic, faults, chaos.fault)
    player.start()
    producer.start()
    try:
        producer.result(timeout=120)
    except BaseException:
        player.finish(timeout=5, early=True)
        raise
    player.finish(timeout=DURATION + 10)
    assert player.applied == len(faults)
    chaos.check("faults", len(faults))

    assert producer.unflushed == 0, f"{producer.unflushed} records not flushed"
    assert producer.failures == [], producer.failure_summary()
    assert [e for e in producer.client_errors if e.fatal()] == []
    assert producer.transactions == -(-count // TRANSACTION)
    # A commit marker after each transaction's records; duplicates the mock acknowledged
    # without storing them are reported without an offset.
    marker_every = TRANSACTION // PARTITIONS
    problems = delivery_problems(producer.delivered, expected, marker_every,
                                 unknown_offsets=True)
    _, stored_problems = read_back(cluster, topic, expected, marker_every=marker_every)
    assert problems + stored_problems == [], "\n".join(
        ["delivery reports:", *problems[:20], "read back:", *stored_problems[:20]])
    chaos.check("delivery reports", count)
    chaos.check("records read back", count)


def test_one_request_in_flight_keeps_order_across_a_refusal(fresh_mock_cluster):
    """The schedule's slow refusal, pinned: batches pile up behind a slow answer, go out
    as a burst of requests, the first is refused; its records must still come first."""
    cluster = fresh_mock_cluster
    topic = unique_topic("chaos-refusal")
    create_topic(cluster, topic, 1, replication_factor=3)
    reports = []
    conf = cluster.client_config({
        "acks": "all", "enable.idempotence": True, "linger.ms": 5,
        "max.in.flight.requests.per.connection": 1,
        "on_delivery": lambda err, msg: reports.append((err, msg.value()))})
    values = []
    with Producer(conf) as p:
        p.produce(topic, b"first", partition=0)
        assert p.flush(10) == 0
        leader = p.list_topics(topic, 10).topics[topic].partitions[0].leader
        cluster.set_rtt(leader, 400)
        start = time.monotonic()
        refused = False
        while time.monotonic() - start < 0.8:
            if not refused and time.monotonic() - start >= 0.3:
                cluster.push_errors(0, [KafkaError.NOT_ENOUGH_REPLICAS])
                refused = True
            values.append(b"%05d" % len(values))
            p.produce(topic, values[-1], partition=0)
            p.poll(0)
            time.sleep(0.02)
        cluster.set_rtt(leader, 0)
        assert p.flush(30) == 0
    assert [err for err, _ in reports] == [None] * (len(values) + 1)
    stored = [g.value for g in read_confluent(cluster, topic, 1, len(values) + 1)]
    assert stored == [b"first", *values]
