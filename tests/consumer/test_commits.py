"""Offset storage and commits: auto commit on the poll path, store_offsets without auto store,
commit callbacks; and records produced by kafka_fast's own producer read back exactly."""

from __future__ import annotations

import time

from consumer_support import as_tuple, make_items, read_all, wait_for
from harness import create_topic, unique_topic

from kafka_fast import Consumer, KafkaError, Producer, TopicPartition

FAST = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
        "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100}


def produce_ours(broker, topic: str, items: list[dict]) -> list:
    producer = Producer(broker.client_config({"linger.ms": 5}))
    acked: list = []
    errors: list = []

    def reporter(item):
        def report(err, msg):
            if err is not None:
                errors.append(err)
            else:
                acked.append((msg.partition(), msg.offset(), item["key"], item["value"],
                              item["headers"], item["timestamp"]))
        return report

    for it in items:
        producer.produce(topic, value=it["value"], key=it["key"], partition=it["partition"],
                         headers=it["headers"], timestamp=it["timestamp"],
                         on_delivery=reporter(it))
    assert producer.flush(30) == 0
    assert not errors, errors
    return sorted(acked)


def test_records_from_our_producer_read_back_exactly(broker):
    topic = unique_topic("own")
    create_topic(broker, topic, 2)
    expected = produce_ours(broker, topic, make_items(100, 2))
    c = Consumer(broker.client_config(dict(FAST, **{"group.id": unique_topic("g")})))
    try:
        c.assign([TopicPartition(topic, p) for p in range(2)])
        assert sorted(as_tuple(m) for m in read_all(c, 100)) == expected
    finally:
        c.close()


def test_auto_commit_from_the_poll_path_reports_through_on_commit(broker):
    topic = unique_topic("auto")
    create_topic(broker, topic, 1)
    expected = produce_ours(broker, topic, make_items(30, 1))
    reports = []
    c = Consumer(broker.client_config(dict(
        FAST, **{"group.id": unique_topic("g"), "auto.commit.interval.ms": 200,
                 "on_commit": lambda err, parts: reports.append((err, parts))})))
    try:
        c.subscribe([topic])
        got = read_all(c, 30)
        assert sorted(as_tuple(m) for m in got) == expected
        wait_for(lambda: any(err is None and parts and parts[0].offset == 30
                             for err, parts in reports), 10, lambda: c.poll(0.1),
                 "an auto commit of offset 30")
        found = c.committed([TopicPartition(topic, 0)], timeout=10)
        assert found[0].offset == 30
    finally:
        c.close()


def test_store_offsets_without_auto_store_commits_only_what_was_stored(broker):
    topic = unique_topic("store")
    create_topic(broker, topic, 1)
    produce_ours(broker, topic, make_items(20, 1))
    group = unique_topic("g")
    c = Consumer(broker.client_config(dict(
        FAST, **{"group.id": group, "enable.auto.commit": False,
                 "enable.auto.offset.store": False})))
    try:
        c.subscribe([topic])
        got = read_all(c, 20)
        assert [m.offset() for m in got] == list(range(20))
        c.store_offsets(message=got[6])
        result = c.commit(asynchronous=False)
        assert [(tp.partition, tp.offset) for tp in result] == [(0, 7)]
        c.store_offsets(offsets=[TopicPartition(topic, 0, 12)])
        c.commit(asynchronous=False)
        assert c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset == 12
        assert c.position([TopicPartition(topic, 0)])[0].offset == 20
    finally:
        c.close()
    again = Consumer(broker.client_config(dict(FAST, **{"group.id": group})))
    try:
        again.subscribe([topic])
        rest = read_all(again, 8)
        assert [m.offset() for m in rest] == list(range(12, 20))
        time.sleep(0.2)
        assert again.poll(0.3) is None
    finally:
        again.close()


def test_no_committed_offset_under_auto_offset_reset_error_is_reported(broker):
    """auto.offset.reset=error: a partition without a committed offset yields one
    _AUTO_OFFSET_RESET error and no records, until the application seeks."""
    topic = unique_topic("reset-error")
    create_topic(broker, topic, 1)
    expected = produce_ours(broker, topic, make_items(5, 1, "r"))
    c = Consumer(broker.client_config(dict(FAST, **{"group.id": unique_topic("g"),
                                                    "auto.offset.reset": "error",
                                                    "enable.auto.commit": False})))
    try:
        c.assign([TopicPartition(topic, 0)])
        events = [c.poll(0.5) for _ in range(6)]
        errors = [m.error() for m in events if m is not None]
        assert [e.code() for e in errors] == [KafkaError._AUTO_OFFSET_RESET]
        assert f"{topic} [0]" in errors[0].str()
        c.seek(TopicPartition(topic, 0, 2))
        got = read_all(c, 3)
        assert [as_tuple(m) for m in got] == expected[2:]
    finally:
        c.close()
