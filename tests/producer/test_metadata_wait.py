"""Records produced before their topic's metadata is known: per-partition call order kept
when produce_batch follows, and produce_batch's errors when the metadata never comes."""

from __future__ import annotations

import contextlib
import re
import socket
import threading

import pytest
from harness.topics import unique_topic
from readback import read_confluent

from kafka_fast import KafkaError, KafkaException, Producer


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
def test_produce_then_produce_batch_to_a_new_topic_keeps_call_order(kafka, learned_by):
    """produce() records wait for a topic the broker creates on first sight (auto.create.topics.enable); produce_batch to the
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

    with Producer(kafka.client_config({"linger.ms": 5})) as p:
        with _sender_paused(p) if learned_by == "application" else contextlib.nullcontext():
            for v in before:
                p.produce(topic, v, partition=0, on_delivery=report)
            assert p.produce_batch(topic, batch, partition=0, on_delivery=report) == 4
            for v in after:
                p.produce(topic, v, partition=0, on_delivery=report)
            assert len(p) == len(want)
        assert p.flush(30) == 0
    assert sorted(reports, key=lambda r: r[2]) == [(None, 0, i, v) for i, v in enumerate(want)]
    got = read_confluent(kafka, topic, 1, len(want))
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (0, i, v) for i, v in enumerate(want)]


def test_produce_batch_times_out_naming_the_topic_and_what_is_missing(mock_cluster):
    """The cluster keeps answering that the topic does not exist (a retriable error: it
    could be being created): after request.timeout.ms, _TIMED_OUT saying so, nothing
    queued. Once the cluster knows the topic the same call goes through."""
    topic = unique_topic("pb-wait")
    mock_cluster.topic_set_error(topic, KafkaError.UNKNOWN_TOPIC_OR_PART)
    reports: list = []
    with Producer(mock_cluster.client_config({"request.timeout.ms": 1000})) as p:
        with pytest.raises(KafkaException) as info:
            p.produce_batch(topic, [b"a", b"b"], partition=0)
        err = info.value.args[0]
        assert (err.code(), err.retriable()) == (KafkaError._TIMED_OUT, True)
        assert err.str() == (
            f"Local: Timed out: partitions of topic {topic!r} not known after 1s "
            "(request.timeout.ms): the cluster reports UNKNOWN_TOPIC_OR_PART for it (Broker: "
            "This server does not host this topic-partition.); no record was queued")
        assert len(p) == 0
        mock_cluster.topic_set_error(topic, 0)
        assert p.produce_batch(topic, [b"a", b"b"], partition=0,
                               on_delivery=lambda e, m: reports.append(
                                   (e, m.partition(), m.offset(), m.value()))) == 2
        assert p.flush(10) == 0
    assert reports == [(None, 0, 0, b"a"), (None, 0, 1, b"b")]


def test_final_topic_error_is_raised_at_once_and_fails_waiting_records(kafka):
    """The broker refuses an invalid topic name with INVALID_TOPIC_EXCEPTION, which no retry can
    clear: produce_batch raises it naming the topic, and records produce() queued for the
    topic fail with it instead of waiting out delivery.timeout.ms."""
    topic = "not a valid name!"
    reports: list = []
    with Producer(kafka.client_config({"delivery.timeout.ms": 600000})) as p:
        p.produce(topic, b"first", partition=0,
                  on_delivery=lambda e, m: reports.append((e, m.topic(), m.partition(),
                                                           m.value())))
        p.produce(topic, b"second",
                  on_delivery=lambda e, m: reports.append((e, m.topic(), m.partition(),
                                                           m.value())))
        with pytest.raises(KafkaException) as info:
            p.produce_batch(topic, [b"a"], partition=0)
        err = info.value.args[0]
        assert (err.code(), err.retriable()) == (KafkaError.INVALID_TOPIC_EXCEPTION, False)
        assert err.str() == ("Broker: The request attempted to perform an operation on an "
                             f"invalid topic. (topic {topic!r}; no record was queued)")
        assert p.flush(10) == 0
    reason = ("Broker: The request attempted to perform an operation on an invalid topic. "
              f"(topic {topic!r})")
    # Each record is reported with the partition it was given (None, as in confluent-kafka,
    # when the partitioner had not chosen one yet).
    assert sorted((e.code(), e.str(), t, v, part) for e, t, part, v in reports) == [
        (KafkaError.INVALID_TOPIC_EXCEPTION, reason, topic, b"first", 0),
        (KafkaError.INVALID_TOPIC_EXCEPTION, reason, topic, b"second", None)]


def test_produce_batch_without_any_broker_times_out():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    p = Producer({"bootstrap.servers": dead, "request.timeout.ms": 500})
    try:
        with pytest.raises(KafkaException) as info:
            p.produce_batch("nowhere", [b"a"])
        err = info.value.args[0]
        assert err.code() == KafkaError._TIMED_OUT
        assert re.fullmatch(
            r"Local: Timed out: partitions of topic 'nowhere' not known after 0\.5s "
            r"\(request\.timeout\.ms\): no broker answered a metadata request"
            r"( \(last error: .+\))?; no record was queued", err.str()), err.str()
        assert len(p) == 0
    finally:
        p.close(0)
