"""Subscription events as confluent-kafka gives them, side by side on the same broker: a
subscribed topic the cluster lacks, and a ``^regex`` matching nothing, come back from
``poll()``/``consume()`` once as a Message whose error is UNKNOWN_TOPIC_OR_PART (classic
protocol; KIP-848 reports nothing); ``subscribe([])`` raises _INVALID_ARG."""

from __future__ import annotations

import time
import uuid

import confluent_kafka
import pytest
from harness import create_topic, unique_topic
from harness.reference_client import produce

from kafka_fast import Consumer, KafkaError, KafkaException

pytestmark = pytest.mark.timeout(120)

E = KafkaError
#: Metadata refreshed every 0.5 s: an error reported once must not come back with each one.
REFRESH = {"metadata.max.age.ms": 500}
#: librdkafka's own name for the refresh interval (kafka_fast honours it too).
THEIR_REFRESH = {**REFRESH, "topic.metadata.refresh.interval.ms": 500}


def _conf(kafka, **extra) -> dict:
    return kafka.client_config({"group.id": unique_topic("g"), "auto.offset.reset": "earliest",
                                **extra})


def _fields(msg) -> tuple:
    err = msg.error()
    return (err.code() if err is not None else None, err.str() if err is not None else None,
            msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
            msg.timestamp(), err.retriable() if err is not None else None)


def _collect(client_class, conf: dict, topics: list[str], seconds: float,
             how: str = "poll") -> tuple[list[tuple], float | None]:
    """Subscribe and read for ``seconds``: the messages' fields, and when the first came."""
    c = client_class(conf)
    out: list[tuple] = []
    first = None
    try:
        started = time.monotonic()
        c.subscribe(topics)
        while time.monotonic() - started < seconds:
            got = [c.poll(0.05)] if how == "poll" else c.consume(10, 0.05)
            for msg in got:
                if msg is None:
                    continue
                if first is None:
                    first = time.monotonic() - started
                out.append(_fields(msg))
    finally:
        c.close()
    return out, first


def _unavailable(name: str) -> tuple:
    text = f"Subscribed topic not available: {name}: Broker: Unknown topic or partition"
    return (E.UNKNOWN_TOPIC_OR_PART, text, name, 0, None, None, text.encode(), (0, -1), False)


@pytest.mark.parametrize("how", ["poll", "consume"])
def test_missing_topic_reported_once_like_confluent(kafka, how):
    missing = unique_topic("missing")
    conf = _conf(kafka, **REFRESH)
    theirs, their_first = _collect(confluent_kafka.Consumer, {**conf, **THEIR_REFRESH},
                                   [missing], 2.5, how)
    ours, our_first = _collect(Consumer, {**conf, "group.id": unique_topic("g")}, [missing],
                               2.5, how)
    assert theirs == [_unavailable(missing)]
    assert ours == theirs
    assert their_first is not None and our_first is not None and our_first < 1.0, our_first


def test_each_missing_topic_is_reported_and_present_ones_are_read(kafka):
    present, missing = unique_topic("present"), unique_topic("missing")
    create_topic(kafka, present, 1)
    produce(kafka, present, [(0, b"k", b"v")])
    conf = _conf(kafka)
    theirs, _ = _collect(confluent_kafka.Consumer, conf, [present, missing, missing + "-2"],
                         8)
    ours, _ = _collect(Consumer, {**conf, "group.id": unique_topic("g")},
                       [present, missing, missing + "-2"], 8)
    for got in (theirs, ours):
        errors = sorted(f for f in got if f[0] is not None)
        assert errors == sorted([_unavailable(missing), _unavailable(missing + "-2")]), got
        records = [(f[2], f[3], f[4], f[5], f[6]) for f in got if f[0] is None]
        assert records == [(present, 0, 0, b"k", b"v")], got


def test_pattern_matching_nothing_is_reported_like_confluent(kafka):
    pattern = f"^nomatch-{uuid.uuid4().hex[:8]}-.*"
    conf = _conf(kafka, **REFRESH)
    theirs, _ = _collect(confluent_kafka.Consumer, {**conf, **THEIR_REFRESH}, [pattern], 2.5)
    ours, our_first = _collect(Consumer, {**conf, "group.id": unique_topic("g")}, [pattern],
                               2.5)
    assert theirs == [_unavailable(pattern)]
    assert ours == theirs
    assert our_first is not None and our_first < 1.0


def test_kip848_reports_no_missing_topic_like_confluent(kafka):
    if kafka.kind != "kafka":
        pytest.skip("KIP-848 groups need Apache Kafka")
    missing = unique_topic("missing")
    conf = _conf(kafka, **{"group.protocol": "consumer"})
    theirs, _ = _collect(confluent_kafka.Consumer, conf, [missing], 2)
    ours, _ = _collect(Consumer, {**conf, "group.id": unique_topic("g")}, [missing], 2)
    assert theirs == ours == []


@pytest.mark.parametrize("topics", [[], [""]], ids=["empty-list", "empty-name"])
def test_empty_subscription_raises_invalid_arg_like_confluent(topics):
    conf = {"bootstrap.servers": "127.0.0.1:9", "group.id": "g"}
    for client_class, exc_class in ((confluent_kafka.Consumer, confluent_kafka.KafkaException),
                                    (Consumer, KafkaException)):
        c = client_class(conf)
        try:
            with pytest.raises(exc_class) as info:
                c.subscribe(topics)
            err = info.value.args[0]
            assert err.code() == E._INVALID_ARG
            assert err.str().startswith("Failed to set subscription: Local: Invalid argument")
        finally:
            c.close()


@pytest.mark.parametrize("topics", ["topic", None, [b"topic"], [1]],
                         ids=["str", "none", "bytes", "int"])
def test_subscription_that_is_not_a_list_of_names_raises_type_error(topics):
    with Consumer({"bootstrap.servers": "127.0.0.1:9", "group.id": "g"}) as c:
        with pytest.raises(TypeError, match="list of topic names"):
            c.subscribe(topics)
