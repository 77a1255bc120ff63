"""Clients built without ``bootstrap.servers``, side by side with confluent-kafka: librdkafka
builds them, logs a notice and calls no ``error_cb``; records queue, requests wait out their
time-outs. confluent-kafka's own unit tests and many test fixtures make clients this way."""

from __future__ import annotations

import logging
import time

import confluent_kafka
import confluent_kafka.admin
import pytest

import kafka_fast
import kafka_fast.admin

pytestmark = pytest.mark.timeout(60)

NOTICE = "No `bootstrap.servers` configured: client will not be able to connect to Kafka cluster"
CLIENTS = {"kafka_fast": (kafka_fast, kafka_fast.admin),
           "confluent_kafka": (confluent_kafka, confluent_kafka.admin)}


class Recorder(logging.Handler):
    """Keeps the log records a client's ``logger`` receives."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def notices(self) -> list[int]:
        """The levels of the records carrying librdkafka's notice."""
        return [r.levelno for r in self.records if NOTICE in r.getMessage()]


def _logger(name: str) -> tuple[logging.Logger, Recorder]:
    logger = logging.getLogger(f"test-no-bootstrap.{name}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    for old in list(logger.handlers):
        logger.removeHandler(old)
    rec = Recorder()
    logger.addHandler(rec)
    return logger, rec


def _code(call) -> int:
    with pytest.raises(Exception) as info:
        call()
    return info.value.args[0].code()


@pytest.mark.parametrize("which", list(CLIENTS))
def test_producer(which):
    ck, _ = CLIENTS[which]
    E = ck.KafkaError
    errors: list = []
    logger, rec = _logger(f"producer-{which}")
    p = ck.Producer({"error_cb": errors.append, "logger": logger})
    reports: list = []
    p.produce("t", b"v", key=b"k", on_delivery=lambda err, msg: reports.append((err, msg)))
    p.poll(0.2)  # serves librdkafka's queued log line
    assert reports == []
    started = time.monotonic()
    assert p.flush(0.5) == 1  # the record is still queued: no broker to take it
    assert 0.4 < time.monotonic() - started < 5
    assert _code(lambda: p.list_topics(timeout=0.5)) == E._TRANSPORT
    assert _code(lambda: p.list_topics("t", timeout=0.5)) == E._TRANSPORT
    p.purge()
    p.poll(0)
    assert [(err.code(), msg.topic(), msg.key(), msg.value()) for err, msg in reports] == [
        (E._PURGE_QUEUE, "t", b"k", b"v")]
    assert p.flush(0.5) == 0
    assert errors == []
    assert rec.notices() == [logging.INFO]


@pytest.mark.parametrize("which", list(CLIENTS))
def test_producer_records_time_out(which):
    ck, _ = CLIENTS[which]
    p = ck.Producer({"message.timeout.ms": 300, "error_cb": lambda e: None})
    reports: list = []
    p.produce("t", b"v", on_delivery=lambda err, msg: reports.append(err.code()))
    assert p.flush(10) == 0
    assert reports == [ck.KafkaError._MSG_TIMED_OUT]


@pytest.mark.parametrize("which", list(CLIENTS))
def test_consumer(which):
    ck, _ = CLIENTS[which]
    E = ck.KafkaError
    errors: list = []
    logger, rec = _logger(f"consumer-{which}")
    c = ck.Consumer({"group.id": "g", "error_cb": errors.append, "logger": logger,
                     "session.timeout.ms": 1500, "heartbeat.interval.ms": 500})
    c.subscribe(["t"])
    assert c.poll(0.3) is None
    assert c.consume(5, 0.3) == []
    assert c.assignment() == []
    tp = ck.TopicPartition("t", 0)
    assert _code(lambda: c.committed([tp], timeout=0.5)) == E._TIMED_OUT
    assert _code(lambda: c.list_topics(timeout=0.5)) == E._TRANSPORT
    started = time.monotonic()
    # a commit waits session.timeout.ms for a group coordinator
    assert _code(lambda: c.commit(offsets=[ck.TopicPartition("t", 0, 5)],
                                  asynchronous=False)) == E._WAIT_COORD
    assert 1.4 < time.monotonic() - started < 10
    started = time.monotonic()
    c.close()
    assert time.monotonic() - started < 5
    assert errors == []
    # librdkafka's consumer counts its group coordinator handle as a broker and skips the
    # notice; kafka_fast's logs it as its producer and admin client do.
    assert rec.notices() == ([logging.INFO] if which == "kafka_fast" else [])


@pytest.mark.parametrize("which", list(CLIENTS))
def test_admin_client(which):
    ck, admin = CLIENTS[which]
    E = ck.KafkaError
    errors: list = []
    logger, rec = _logger(f"admin-{which}")
    a = admin.AdminClient({"error_cb": errors.append, "logger": logger})
    started = time.monotonic()
    fs = a.create_topics([admin.NewTopic("x", 1, 1)], request_timeout=1.0)
    assert _code(lambda: fs["x"].result(10)) == E._TIMED_OUT
    assert 0.9 < time.monotonic() - started < 8
    assert _code(lambda: a.list_topics(timeout=0.5)) == E._TRANSPORT
    a.poll(0.1)
    assert errors == []
    assert rec.notices() == [logging.INFO]


@pytest.mark.parametrize("which", list(CLIENTS))
def test_bootstrap_servers_none_is_no_bootstrap_servers(which):
    """None resets a string property to its default in librdkafka: no broker at all."""
    ck, _ = CLIENTS[which]
    reports: list = []
    p = ck.Producer({"bootstrap.servers": None, "client.id": None, "message.timeout.ms": 200})
    p.produce("t", b"v", on_delivery=lambda err, msg: reports.append(err.code()))
    assert p.flush(10) == 0
    assert reports == [ck.KafkaError._MSG_TIMED_OUT]
    with pytest.raises(Exception) as info:
        ck.Producer({"linger.ms": None})
    assert info.value.args[0].code() == ck.KafkaError._INVALID_ARG


def test_heartbeat_not_below_session_timeout_is_built_with_a_warning():
    conf = {"group.id": "g", "session.timeout.ms": 1000, "heartbeat.interval.ms": 3000}
    confluent_kafka.Consumer(dict(conf)).close()  # librdkafka builds it
    with pytest.warns(UserWarning, match="heartbeat.interval.ms"):
        c = kafka_fast.Consumer(dict(conf))
    c.close()


@pytest.mark.parametrize("which", list(CLIENTS))
def test_default_topic_config_is_applied_after_the_top_level(which):
    """confluent-kafka's deprecated default.topic.config dict: its message.timeout.ms wins."""
    ck, _ = CLIENTS[which]
    p = ck.Producer({"message.timeout.ms": 600000,
                     "default.topic.config": {"message.timeout.ms": 300}})
    reports: list = []
    p.produce("t", b"v", on_delivery=lambda err, msg: reports.append(err.code()))
    assert p.flush(10) == 0
    assert reports == [ck.KafkaError._MSG_TIMED_OUT]
    with pytest.raises(TypeError):
        kafka_fast.Producer({"default.topic.config": "message.timeout.ms=300"})
