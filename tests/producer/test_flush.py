"""flush() sends what is queued at once instead of waiting out linger.ms (as librdkafka's does).

linger.ms is far longer than flush's timeout here: a flush that waited for it would return
with records still held and without their reports.
"""

from __future__ import annotations

from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import Producer

LINGER_MS = 30000
FLUSH_TIMEOUT = 10


def test_flush_does_not_wait_for_linger(kafka):
    topic = unique_topic("flush")
    create_topic(kafka, topic, 2)
    reports: list = []

    def report(err, msg):
        reports.append((err, msg.partition(), msg.offset(), msg.value()))

    first = [b"first %d" % i for i in range(6)]
    second = [b"second %d" % i for i in range(6)]
    with Producer(kafka.client_config({"linger.ms": LINGER_MS})) as p:
        # The new producer does not know the topic yet: these records wait for its metadata
        # and get their batches while flush() runs.
        for i, v in enumerate(first):
            p.produce(topic, v, partition=i % 2, on_delivery=report)
        assert p.flush(FLUSH_TIMEOUT) == 0
        assert len(p) == 0
        assert sorted(reports, key=lambda r: (r[1], r[2])) == [
            (None, q, i, v) for q in (0, 1) for i, v in enumerate(first[q::2])]
        # Now the topic is known: the records go straight into open batches.
        reports.clear()
        for i, v in enumerate(second):
            p.produce(topic, v, partition=i % 2, on_delivery=report)
        assert p.flush(FLUSH_TIMEOUT) == 0
        assert sorted(reports, key=lambda r: (r[1], r[2])) == [
            (None, q, 3 + i, v) for q in (0, 1) for i, v in enumerate(second[q::2])]
    got = read_confluent(kafka, topic, 2, 12)
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (q, i, v) for q in (0, 1) for i, v in enumerate((first + second)[q::2])]
