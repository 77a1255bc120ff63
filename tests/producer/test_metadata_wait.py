"""Records produced before their topic's metadata is known: per-partition call order kept
when produce_batch follows, and produce_batch's errors when the metadata never comes."""

from __future__ import annotations

import contextlib
import threading

import pytest
from harness.topics import unique_topic
from readback import read_confluent

from kafka_fast import Producer


@contextlib.contextmanager
def _sender_paused(p: Producer):
    """Keep the producer's sender (its I/O-thread poll hook) from running: metadata still
    arrives, but only the application thread can act on it."""
    client, run = p._client, p._sender_hook
    client.remove_poll_hook(run)
    # A pass that read the hook list before the removal ends before this callback runs.
    passed = threading.Event()
    client.call_soon(passed.set)
    assert passed.wait(10)
    try:
        yield
    finally:
        client.add_poll_hook(run)


@pytest.mark.parametrize("learned_by", ["application", "network"])
def test_produce_then_produce_batch_to_a_new_topic_keeps_call_order(tansu, learned_by):
    """produce() records wait for a topic Tansu creates on first sight; produce_batch to the
    same partition (which waits for the metadata itself) and produce() after it must land
    behind them, whichever thread first applies the topic's metadata. With the sender
    paused, produce_batch is the one that learns the partitions."""
    topic = unique_topic("order")
    before = [b"produce %d" % i for i in range(3)]
    batch = [b"batch %d" % i for i in range(4)]
    after = [b"after %d" % i for i in range(2)]
    want = before + batch + after
    reports: list = []

    def report(err, msg):
        reports.append((err, msg.partition(), msg.offset(), msg.value()))

    with Producer(tansu.client_config({"linger.ms": 5})) as p:
        with _sender_paused(p) if learned_by == "application" else contextlib.nullcontext():
            for v in before:
                p.produce(topic, v, partition=0, on_delivery=report)
            assert p.produce_batch(topic, batch, partition=0, on_delivery=report) == 4
            for v in after:
                p.produce(topic, v, partition=0, on_delivery=report)
            assert len(p) == len(want)
        assert p.flush(30) == 0
    assert sorted(reports, key=lambda r: r[2]) == [(None, 0, i, v) for i, v in enumerate(want)]
    got = read_confluent(tansu, topic, 1, len(want))
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (0, i, v) for i, v in enumerate(want)]
