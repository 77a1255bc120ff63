"""An idle producer leaves its host alone: its I/O thread sleeps about a second at a time
while it holds no record, and a record produced then is still sent after linger.ms."""

from __future__ import annotations

import time

from harness.topics import create_topic, unique_topic
from harness.wakeups import selects_while_idle
from readback import read_confluent

from kafka_fast import Producer


def test_idle_producer_sleeps_and_wakes_for_the_next_record(kafka):
    topic = unique_topic("idle")
    create_topic(kafka, topic, 1)
    reports: list = []

    def report(err, msg):
        reports.append((err, msg.partition(), msg.offset(), msg.value()))

    with Producer(kafka.client_config({"linger.ms": 5})) as p:
        p.produce(topic, b"first", partition=0, on_delivery=report)
        assert p.flush(30) == 0
        calls = selects_while_idle(p._client.loop.selector, 2.0)
        assert 1 <= len(calls) <= 6, calls  # 40 when it woke every 50 ms
        p.produce(topic, b"second", partition=0, on_delivery=report)
        deadline = time.monotonic() + 0.5  # linger.ms, not the idle sleep, decides
        while len(reports) < 2 and time.monotonic() < deadline:
            p.poll(0.05)
        assert reports == [(None, 0, 0, b"first"), (None, 0, 1, b"second")]
    got = read_confluent(kafka, topic, 1, 2)
    assert [(g.partition, g.offset, g.value) for g in got] == [(0, 0, b"first"), (0, 1, b"second")]
