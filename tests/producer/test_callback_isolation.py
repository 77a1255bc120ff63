"""A user callback that raises in the Producer's poll()/flush(): the exception propagates from
that call (as confluent-kafka's does), serving stops at the raising callback, and the next
poll()/flush() serves every report it left - no record loses its report. Checked side by side
with confluent-kafka on Apache Kafka."""

from __future__ import annotations

import time

import confluent_kafka
import pytest
from harness.topics import create_topic, unique_topic, wait_for_topic

import kafka_fast
from kafka_fast import KafkaError
from kafka_fast.admin import NewTopic


class Boom(Exception):
    pass


def _raises(serve, seen: list, want: int, timeout: float = 30.0) -> int:
    """Call ``serve()`` until ``want`` callbacks were seen; how many times it raised Boom."""
    raised = 0
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        try:
            serve()
        except Boom:
            raised += 1
    return raised


def _serve_all(p, seen: list, want: int, timeout: float = 30.0) -> list:
    """poll() until ``want`` reports were seen; what each call did, in order."""
    log = []
    deadline = time.monotonic() + timeout
    while len(seen) < want and time.monotonic() < deadline:
        try:
            p.poll(1.0)
            log.append(("served", len(seen)))
        except Boom as exc:
            log.append((str(exc), len(seen)))
    return log


@pytest.mark.parametrize("client", [confluent_kafka, kafka_fast], ids=["confluent", "ours"])
def test_a_raising_on_delivery_costs_no_other_record_its_report(kafka, client):
    topic = unique_topic("cb-raise")
    create_topic(kafka, topic, 1)
    p = client.Producer(kafka.client_config({"linger.ms": 100}))
    seen: list = []

    def on_delivery(err, msg):
        seen.append((err, msg.value(), msg.offset()))
        if len(seen) in (3, 7):
            raise Boom(f"raised at {len(seen)}")

    for i in range(20):
        p.produce(topic, b"%d" % i, on_delivery=on_delivery)
    log = _serve_all(p, seen, 20)
    # The first poll() raises from the third report, the next from the seventh; the one
    # after serves the thirteen left (all 20 went in one batch).
    assert log[:3] == [("raised at 3", 3), ("raised at 7", 7), ("served", 20)]
    assert seen == [(None, b"%d" % i, i) for i in range(20)]
    assert len(p) == 0
    assert p.flush(10) == 0
    p.close()


def test_records_whose_reports_wait_count_in_len_and_flush_serves_them(kafka):
    topic = unique_topic("cb-flush")
    create_topic(kafka, topic, 2)
    seen: list = []

    def on_delivery(err, msg):
        seen.append((msg.partition(), msg.offset()))
        if len(seen) == 2:
            raise Boom("second")

    with kafka_fast.Producer(kafka.client_config({"linger.ms": 5})) as p:
        for i in range(10):
            p.produce(topic, b"%d" % i, partition=i % 2, on_delivery=on_delivery)
        with pytest.raises(Boom):
            p.flush(30)
        assert len(seen) == 2
        # Every record is delivered; eight still wait for their report.
        assert len(p) == 8
        assert p.flush(30) == 0
        assert len(p) == 0
    assert sorted(seen) == [(q, o) for q in (0, 1) for o in range(5)]


def test_a_raising_produce_batch_callback_loses_no_report(kafka):
    topic = unique_topic("cb-batch")
    create_topic(kafka, topic, 1)
    seen: list = []

    def on_delivery(err, msg):
        seen.append((err, msg.value(), msg.offset()))
        if len(seen) == 50:
            raise Boom("fiftieth")

    with kafka_fast.Producer(kafka.client_config({"linger.ms": 5})) as p:
        assert p.produce_batch(topic, [b"%d" % i for i in range(200)],
                               on_delivery=on_delivery) == 200
        with pytest.raises(Boom):
            p.flush(30)
        assert p.flush(30) == 0
    assert seen == [(None, b"%d" % i, i) for i in range(200)]


def test_a_raising_default_on_delivery_loses_no_report(kafka):
    topic = unique_topic("cb-default")
    create_topic(kafka, topic, 1)
    seen: list = []

    def on_delivery(err, msg):
        seen.append((err, msg.offset()))
        if len(seen) % 10 == 0:
            raise Boom("every tenth")

    with kafka_fast.Producer(kafka.client_config({"linger.ms": 5,
                                                  "on_delivery": on_delivery})) as p:
        for i in range(30):
            p.produce(topic, b"%d" % i)
        raised = _raises(lambda: p.flush(10), seen, 30)
        assert p.flush(10) == 0
    assert raised == 3
    assert seen == [(None, i) for i in range(30)]


def test_a_raising_error_cb_loses_no_failure_report(kafka):
    """Records without a callback whose batches the broker refuses are reported to
    ``error_cb``, one failure per batch; when it raises, the next poll() reports the rest."""
    topic = unique_topic("cb-error")
    with kafka_fast.admin.AdminClient(kafka.client_config()) as admin:
        admin.create_topics([NewTopic(topic, 3, 1, config={"max.message.bytes": "10000"})]
                            )[topic].result(30)
    wait_for_topic(kafka, topic, 3)
    failures: list = []

    def error_cb(err):
        failures.append(err)
        if len(failures) == 1:
            raise Boom("first failure")

    conf = kafka.client_config({"linger.ms": 50, "message.max.bytes": 5_000_000,
                                "error_cb": error_cb, "retries": 0})
    with kafka_fast.Producer(conf) as p:
        for q in range(3):  # over the topic's limit: refused by the broker
            p.produce(topic, b"x" * 20_000, partition=q)
        raised = _raises(lambda: p.poll(1.0), failures, 3)
    assert raised == 1
    too_large = [f for f in failures if f.code() == KafkaError.MSG_SIZE_TOO_LARGE]
    assert len(too_large) == 3, failures
    assert sorted(q for q in range(3) for f in too_large
                  if f"1 record(s) to {topic} [{q}] failed" in f.str()) == [0, 1, 2]


def test_a_raising_stats_cb_propagates_and_reports_go_on(kafka):
    topic = unique_topic("cb-stats")
    create_topic(kafka, topic, 1)
    stats: list = []
    seen: list = []

    def stats_cb(json_str):
        stats.append(json_str)
        if len(stats) == 1:
            raise Boom("stats")

    conf = kafka.client_config({"statistics.interval.ms": 100, "stats_cb": stats_cb})
    with kafka_fast.Producer(conf) as p:
        for i in range(5):
            p.produce(topic, b"%d" % i, on_delivery=lambda err, msg: seen.append(msg.offset()))
        raised = 0
        deadline = time.monotonic() + 30
        while (len(stats) < 3 or len(seen) < 5) and time.monotonic() < deadline:
            try:
                p.poll(0.2)
            except Boom:
                raised += 1
    assert raised == 1
    assert len(stats) >= 3
    assert seen == list(range(5))


def test_close_serves_every_report_and_then_raises_the_first_callback_exception(kafka):
    topic = unique_topic("cb-close")
    create_topic(kafka, topic, 1)
    seen: list = []

    def on_delivery(err, msg):
        seen.append((err, msg.offset()))
        if len(seen) in (2, 5):
            raise Boom(f"raised at {len(seen)}")

    p = kafka_fast.Producer(kafka.client_config({"linger.ms": 50}))
    for i in range(10):
        p.produce(topic, b"%d" % i, on_delivery=on_delivery)
    with pytest.raises(Boom, match="raised at 2"):
        p.close(30)
    assert seen == [(None, i) for i in range(10)]
    with pytest.raises(RuntimeError, match="closed"):
        p.produce(topic, b"after")
    p.close()  # closed: nothing left to do
