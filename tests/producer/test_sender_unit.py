"""The sender on its own: an accumulator, a delivery queue and a client, no Producer around
them. Batches sealed in the accumulator reach the partition leaders; each comes back once
with its base offset; a consumer of another client reads exactly what was queued."""

from __future__ import annotations

import time

from harness import create_topic, unique_topic
from readback import read_confluent

from kafka_fast.config import make_config
from kafka_fast.net import KafkaClient
from kafka_fast.producer.accumulator import Accumulator
from kafka_fast.producer.delivery import DeliveryQueue
from kafka_fast.producer.partitioner import algorithm_id
from kafka_fast.producer.sender import Sender


def test_sender_ships_sealed_batches_and_reports_each_once(real_broker):
    topic = unique_topic("sender")
    create_topic(real_broker, topic, 2)
    config = make_config(real_broker.client_config({"linger.ms": 1000}), "producer")
    client = KafkaClient(config)
    acc = Accumulator(config, algorithm_id(config["partitioner"]))
    reports = DeliveryQueue()
    sender = Sender(client, config, acc, reports, idempotent=True, acks=-1)
    hook = sender.run  # removal needs the same object
    client.add_poll_hook(hook)
    client.start()
    try:
        info = client.request_metadata([topic]).result(30).topics[topic]
        t = acc.topic(topic)
        with acc.lock:
            assert sender.learn_topic(t, info)
            assert t.num_partitions == 2
            for i in range(30):
                acc.append(t.parts[i % 2], b"v%d" % i, b"k%d" % i, 1_700_000_000_000 + i,
                           None, None)
                acc.count += 1
                if i == 9:
                    acc.seal(t.parts[1])  # partition 1: two batches (5 records, then 10)
            acc.seal_all()
        client.wakeup()
        deadline = time.monotonic() + 30
        done = []
        while sum(b.count for b in done) < 30 and time.monotonic() < deadline:
            reports.wait(0.2)
            while reports.done:
                done.append(reports.done.popleft())
        batches = sorted((b.part.partition, b.base_offset, b.count, b.error) for b in done)
        assert batches == [(0, 0, 15, None), (1, 0, 5, None), (1, 5, 10, None)]
        assert sender.fatal_error is None
        got = read_confluent(real_broker, topic, 2, 30)
        assert [(g.partition, g.offset, g.key, g.value, g.timestamp) for g in got] == \
            [(0, n, b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i)
             for n, i in enumerate(range(0, 30, 2))] + \
            [(1, n, b"k%d" % i, b"v%d" % i, 1_700_000_000_000 + i)
             for n, i in enumerate(range(1, 30, 2))]
    finally:
        client.remove_poll_hook(hook)
        client.close()
