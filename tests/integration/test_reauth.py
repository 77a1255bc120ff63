"""SASL re-authentication (KIP-368) on a real broker whose sessions last 6 s
(connections.max.reauth.ms, the ``oidc_kafka`` node): a producer and a consumer keep their
connections for several session lifetimes, over SCRAM and over OAUTHBEARER (OIDC tokens of
10 s, renewed on the way), and every record is delivered and read exactly once. The broker
would close a connection whose session ended; the clients' logs show the lifetime it gave,
the re-authentications, and that no connection was opened twice or closed."""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter

import pytest
from harness import create_topic, unique_topic
from harness.oauth2 import REAUTH_MS, oidc_config

from kafka_fast import Consumer, Producer

pytestmark = [pytest.mark.apache, pytest.mark.timeout(180)]

RUN_SECONDS = 3.5 * REAUTH_MS / 1000


class _Events(logging.Handler):
    """Collects the connection events (``kafka_event`` log extras) of one client."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "kafka_event", None):
            self.records.append(record)

    def of(self, kind: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.kafka_event == kind]  # type: ignore[attr-defined]


def _logger(events: _Events) -> logging.Logger:
    log = logging.getLogger(f"kafka_fast.test.reauth.{uuid.uuid4().hex[:8]}")
    log.setLevel(logging.DEBUG)
    log.propagate = False
    log.addHandler(events)
    return log


def _run(conf: dict, topic: str) -> tuple[_Events, _Events]:
    """Produce one record every 10 ms for RUN_SECONDS while a group consumer reads them."""
    pevents, cevents = _Events(), _Events()
    acked: list[tuple[int, int]] = []
    failed: list = []
    read: list[bytes] = []
    order: dict[int, list[int]] = {0: [], 1: []}  # record numbers per partition, as read

    def report(err, msg):
        (failed.append(err) if err is not None
         else acked.append((msg.partition(), msg.offset())))

    producer = Producer({**conf, "linger.ms": 2, "logger": _logger(pevents),
                         "error_cb": failed.append})
    consumer = Consumer({**conf, "group.id": unique_topic("g"), "auto.offset.reset": "earliest",
                         "logger": _logger(cevents), "error_cb": failed.append})
    consumer.subscribe([topic])
    sent = 0
    try:
        end = time.monotonic() + RUN_SECONDS
        next_send = time.monotonic()
        while time.monotonic() < end:
            if time.monotonic() < next_send:
                msg = consumer.poll(0.005)
                if msg is not None and msg.error() is None:
                    read.append(msg.value())
                    order[msg.partition()].append(int(msg.value()[1:]))
                continue
            next_send += 0.01
            producer.produce(topic, f"r{sent}".encode(), partition=sent % 2,
                             on_delivery=report)
            sent += 1
            producer.poll(0)
            msg = consumer.poll(0)
            if msg is not None and msg.error() is None:
                read.append(msg.value())
                order[msg.partition()].append(int(msg.value()[1:]))
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 30
        while len(read) < sent and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                read.append(msg.value())
                order[msg.partition()].append(int(msg.value()[1:]))
        closes = pevents.of("closed") + cevents.of("closed")
    finally:
        consumer.close()
        producer.close()
    assert not failed, failed[:5]
    assert len(set(acked)) == len(acked) == sent, (len(set(acked)), len(acked), sent)
    counts = Counter(read)  # each record read exactly once
    missing = [i for i in range(sent) if counts[f"r{i}".encode()] != 1]
    assert not missing and len(read) == sent, (missing[:10], len(read), sent)
    # Requests held back during re-authentication kept their order.
    assert all(nums == sorted(nums) for nums in order.values())
    for partition in (0, 1):
        offsets = sorted(o for p, o in acked if p == partition)
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets)))
    assert not closes, [r.getMessage() for r in closes]
    return pevents, cevents


def _check_sessions(events: _Events) -> None:
    lifetimes = [r.session_lifetime_ms for r in events.of("authenticated")]  # type: ignore[attr-defined]
    assert lifetimes and all(0 < ms <= REAUTH_MS for ms in lifetimes), lifetimes
    # Each connection (broker/lane) was opened once, and the busiest re-authenticated at
    # least three times instead of being closed by the broker.
    connects = Counter(r.args[0] for r in events.of("connect"))  # type: ignore[index]
    assert connects and set(connects.values()) == {1}, connects
    reauths = Counter(r.getMessage().split(":")[0] for r in events.of("reauthenticated"))
    assert reauths and max(reauths.values()) >= 3, reauths


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "OAUTHBEARER"])
def test_connections_reauthenticate_instead_of_reconnecting(oidc_kafka, mock_oauth2,
                                                            mechanism):
    topic = unique_topic(f"reauth-{mechanism.lower()}")
    create_topic(oidc_kafka, topic, 2)
    if mechanism == "OAUTHBEARER":
        view = oidc_kafka.as_user("alice", mechanism)
        conf = {**view.client_config(), **oidc_config(mock_oauth2)}
        conf.pop("sasl.username"), conf.pop("sasl.password")
    else:
        conf = oidc_kafka.as_user("alice", mechanism).client_config()
    pevents, cevents = _run(conf, topic)
    _check_sessions(pevents)
    _check_sessions(cevents)


def test_failed_reauthentication_closes_with_authentication_error(oidc_kafka):
    """Credentials removed while a connection is open: its next re-authentication fails and
    the connection closes with _AUTHENTICATION (reported to error_cb)."""
    from harness.apache_kafka import allow_everything, create_users, wait_for_login

    from kafka_fast.admin import AdminClient, ScramMechanism, UserScramCredentialDeletion
    from kafka_fast.errors import KafkaError

    user = f"carol{uuid.uuid4().hex[:6]}"
    create_users(oidc_kafka, {user: "carol-secret"})
    allow_everything(oidc_kafka, user)
    view = oidc_kafka.as_user(user, "SCRAM-SHA-256", password="carol-secret")
    wait_for_login(view)
    events = _Events()
    errors: list = []
    with Producer(view.client_config({"logger": _logger(events),
                                      "error_cb": errors.append})) as producer:
        producer.list_topics(timeout=10)
        assert events.of("authenticated")
        with AdminClient(oidc_kafka.client_config()) as admin:
            deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)
            for fut in admin.alter_user_scram_credentials([deletion]).values():
                fut.result(30)
        deadline = time.monotonic() + 3 * REAUTH_MS / 1000
        while not errors and time.monotonic() < deadline:
            producer.poll(0.1)
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "authentication failed" in errors[0].str(), errors[0].str()
    closed = events.of("closed")
    assert closed and closed[0].error.code() == KafkaError._AUTHENTICATION  # type: ignore[attr-defined]
