"""consume(n) that stops at a record batch's end, with more batches fetched behind it:
position() (and the offset auto-stored for commit) is the next record the application gets,
not the end of everything fetched (it jumped there, so a read loop on position() stopped
short and a commit would skip the records not yet handed out)."""

from __future__ import annotations

import time

import pytest
from harness import create_topic, unique_topic

from kafka_fast import Consumer, Producer, TopicPartition

pytestmark = pytest.mark.timeout(60)


def test_position_after_consume_stopping_at_batch_end(kafka):
    topic = unique_topic("pos-chunk")
    create_topic(kafka, topic, 1)
    p = Producer(kafka.client_config({"linger.ms": 0}))
    for batch in range(3):  # three record batches of 5 records
        for i in range(5):
            p.produce(topic, b"v%d" % (batch * 5 + i), partition=0)
        assert p.flush(10) == 0
    c = Consumer(kafka.client_config({"group.id": f"g-{topic}", "enable.auto.commit": False,
                                      "fetch.wait.max.ms": 50}))
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got: list = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            got = [m for m in c.consume(5, 0.5) if m.error() is None]
        assert [m.offset() for m in got] == [0, 1, 2, 3, 4]
        assert [tp.offset for tp in c.position([TopicPartition(topic, 0)])] == [5]
        rest: list = []
        while len(rest) < 10 and time.monotonic() < deadline:
            rest += [m for m in c.consume(100, 0.5) if m.error() is None]
        assert [m.value() for m in rest] == [b"v%d" % i for i in range(5, 15)]
        assert [tp.offset for tp in c.position([TopicPartition(topic, 0)])] == [15]
    finally:
        c.close()
