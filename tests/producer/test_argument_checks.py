"""produce() checks every argument in the caller's thread: a bad one raises there and never
costs another record its delivery report (on Tansu and the mock cluster)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import KafkaError, KafkaException, Producer


def _reporter(reports: dict):
    def report(err, msg):
        reports.setdefault(msg.value(), []).append((err, msg.partition()))
    return report


def _close_bounded(p: Producer, limit: float = 20.0) -> None:
    done = threading.Event()
    thread = threading.Thread(target=lambda: (p.close(), done.set()), daemon=True)
    thread.start()
    assert done.wait(limit), "close() did not return"


def test_bad_timestamp_for_an_unknown_topic_loses_nothing(broker):
    topic = unique_topic("ts")
    create_topic(broker, topic, 2)
    reports: dict = {}
    p = Producer(broker.client_config({"linger.ms": 5, "message.timeout.ms": 20000}))
    try:
        cb = _reporter(reports)
        p.produce(topic, b"before", partition=0, on_delivery=cb)  # metadata not known yet
        for bad in (2**70, 2**63):
            with pytest.raises(OverflowError, match="timestamp .* is out of range"):
                p.produce(topic, b"bad", partition=0, timestamp=bad, on_delivery=cb)
        with pytest.raises(ValueError, match="timestamp must not be negative"):
            p.produce(topic, b"bad", partition=0, timestamp=-3, on_delivery=cb)
        after = [b"after-%d" % i for i in range(20)]
        for v in after:
            p.produce(topic, v, partition=0, on_delivery=cb, timestamp=1_700_000_000_000)
        assert p.flush(20) == 0
    finally:
        _close_bounded(p)
    assert b"bad" not in reports
    assert reports == {v: [(None, 0)] for v in [b"before", *after]}
    got = read_confluent(broker, topic, 2, 21)
    assert [g.value for g in got] == [b"before", *after]


def test_partition_below_minus_one_is_an_unknown_partition(broker):
    topic = unique_topic("neg")
    create_topic(broker, topic, 2)
    reports: dict = {}
    p = Producer(broker.client_config({"linger.ms": 5, "message.timeout.ms": 20000}))
    try:
        cb = _reporter(reports)
        # Metadata unknown: queued, then reported as confluent-kafka does.
        p.produce(topic, b"early", partition=-5, on_delivery=cb)
        p.produce(topic, b"ok", partition=1, on_delivery=cb)
        assert p.flush(20) == 0
        # Metadata known: raised at once, as confluent-kafka does.
        with pytest.raises(KafkaException) as info:
            p.produce(topic, b"late", partition=-5, on_delivery=cb)
        assert info.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
        assert p.flush(5) == 0
    finally:
        _close_bounded(p)
    (err, _), = reports[b"early"]
    assert err.code() == KafkaError._UNKNOWN_PARTITION
    assert reports[b"ok"] == [(None, 1)]
    assert b"late" not in reports
    got = read_confluent(broker, topic, 2, 1)
    assert [(g.partition, g.value) for g in got] == [(1, b"ok")]


def test_buffer_objects_are_accepted_as_values_and_keys(broker):
    topic = unique_topic("buf")
    create_topic(broker, topic, 1)
    arrays = [np.arange(6, dtype=np.uint8), np.arange(6, dtype=np.int32).reshape(2, 3),
              np.zeros((0,), dtype=np.uint8)]
    reports: dict = {}
    with Producer(broker.client_config({"linger.ms": 5})) as p:
        for i, arr in enumerate(arrays):
            p.produce(topic, arr, key=np.array([i], dtype=np.uint8),
                      on_delivery=_reporter(reports))
        assert p.flush(20) == 0
    got = read_confluent(broker, topic, 1, len(arrays))
    assert [g.value for g in got] == [a.tobytes() for a in arrays]
    assert [g.key for g in got] == [bytes([i]) for i in range(len(arrays))]
    assert all(r == [(None, 0)] for r in reports.values())
