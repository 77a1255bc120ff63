"""Requests a user waits on do not queue behind the consumer's long-polling Fetch: a
synchronous commit, committed(), get_watermark_offsets() and list_topics() each answer in far less than ``fetch.wait.max.ms``, on every broker kind."""

from __future__ import annotations

import time

from consumer_support import read_all
from harness import create_topic, unique_topic

from kafka_fast import Consumer, Producer, TopicPartition

ROUNDS = 50
WAIT_MS = 500
# Waiting behind each Fetch would take about ROUNDS * WAIT_MS / 1000 = 25 s; the bound proves
# no round waited one out, with slack for a loaded machine.
BOUND_S = 5.0


def _consumer_with_records(broker, group: str, count: int = 10) -> tuple[Consumer, str]:
    topic = unique_topic("lat")
    create_topic(broker, topic, 1)
    producer = Producer(broker.client_config({"linger.ms": 0}))
    for i in range(count):  # one batch per record: Tansu's high watermark is then exact
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
        assert producer.flush(30) == 0
    c = Consumer(broker.client_config({
        "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": WAIT_MS, "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500}))
    c.subscribe([topic])
    got = read_all(c, count)
    assert [m.value() for m in got] == [f"v{i}".encode() for i in range(count)]
    return c, topic


def test_poll_and_synchronous_commit_do_not_wait_for_the_fetch(broker):
    c, topic = _consumer_with_records(broker, unique_topic("g"))
    try:
        start = time.monotonic()
        for i in range(ROUNDS):
            assert c.poll(0.01) is None
            offset = 1 + i % 10
            result = c.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            assert [(tp.topic, tp.partition, tp.offset, tp.error) for tp in result] == [
                (topic, 0, offset, None)]
        elapsed = time.monotonic() - start
        print(f"{broker.kind}: {ROUNDS} rounds of poll + synchronous commit: {elapsed:.3f} s")
        assert elapsed < BOUND_S
    finally:
        c.close()


def test_committed_does_not_wait_for_the_fetch(broker):
    c, topic = _consumer_with_records(broker, unique_topic("g"))
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        start = time.monotonic()
        for _ in range(ROUNDS):
            assert c.poll(0.01) is None
            found = c.committed([TopicPartition(topic, 0)], timeout=10)
            assert [(tp.topic, tp.partition, tp.offset) for tp in found] == [(topic, 0, 7)]
        elapsed = time.monotonic() - start
        print(f"{broker.kind}: {ROUNDS} rounds of poll + committed(): {elapsed:.3f} s")
        assert elapsed < BOUND_S
    finally:
        c.close()


def test_watermark_offsets_do_not_wait_for_the_fetch(broker):
    c, topic = _consumer_with_records(broker, unique_topic("g"))
    try:
        start = time.monotonic()
        for _ in range(ROUNDS):
            assert c.poll(0.01) is None
            low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            assert (low, high) == (0, 10)
        elapsed = time.monotonic() - start
        print(f"{broker.kind}: {ROUNDS} rounds of poll + get_watermark_offsets(): "
              f"{elapsed:.3f} s")
        assert elapsed < BOUND_S
    finally:
        c.close()


def test_metadata_does_not_wait_for_the_fetch(broker):
    c, topic = _consumer_with_records(broker, unique_topic("g"))
    try:
        start = time.monotonic()
        for _ in range(ROUNDS):
            assert c.poll(0.01) is None
            meta = c.list_topics(topic, timeout=10)
            assert sorted(meta.topics[topic].partitions) == [0]
        elapsed = time.monotonic() - start
        print(f"{broker.kind}: {ROUNDS} rounds of poll + list_topics(): {elapsed:.3f} s")
        assert elapsed < BOUND_S
    finally:
        c.close()

