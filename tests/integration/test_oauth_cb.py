"""``oauth_cb`` against Apache Kafka's OAUTHBEARER listener (unsecured JWTs validated by the
broker), side by side with confluent-kafka where both clients are compared.

The callback is application code: kafka_fast runs it on a worker thread, so a slow callback
holds only the login that waits for its token, while the I/O thread keeps every deadline. A
callback whose expiry is unusable (NaN, infinite, past, not a number) gives no token: the
login fails with ``_AUTHENTICATION`` through ``error_cb`` and the callback is called again on
the next connection attempt."""

from __future__ import annotations

import math
import threading
import time

import confluent_kafka
import pytest
from harness import create_topic, unique_topic

from kafka_fast import Producer
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.net.oauthbearer import unsecured_jwt

pytestmark = [pytest.mark.apache, pytest.mark.timeout(90)]

E = KafkaError
TOKEN_FAILURE = "Failed to acquire SASL OAUTHBEARER token"


def _token(life: int = 600) -> tuple[str, float, str, dict]:
    token = unsecured_jwt(f"principal=alice lifeSeconds={life}")
    return token.value, token.expiry, "alice", {}


def _oauth(apache_kafka):
    view = apache_kafka.as_user("alice", "OAUTHBEARER")
    view.sasl_username = view.sasl_password = None
    return view


def _poll_until(client, done, seconds: float) -> None:
    end = time.monotonic() + seconds
    while not done() and time.monotonic() < end:
        client.poll(0.05)


def test_slow_oauth_cb_keeps_message_timeouts_and_then_logs_in(apache_kafka):
    """An oauth_cb that takes up to 8 s: records with message.timeout.ms=3000 fail with
    _MSG_TIMED_OUT after 3 s (within 20%), not when the callback returns; the callback ran
    outside the I/O thread and the caller's thread, and once it returns the connection logs
    in with its token and the next record is written."""
    topic = unique_topic("oauth-slow")
    create_topic(apache_kafka, topic, 1)
    release = threading.Event()
    threads: list[str] = []

    def slow_cb(config):
        threads.append(threading.current_thread().name)
        release.wait(8)
        return _token()

    reports: list = []
    conf = _oauth(apache_kafka).client_config({"oauth_cb": slow_cb, "message.timeout.ms": 3000,
                                               "linger.ms": 0})
    with Producer(conf) as p:
        started = time.monotonic()
        for i in range(3):
            p.produce(topic, b"late%d" % i, on_delivery=lambda err, msg: reports.append(
                (time.monotonic() - started, err, msg.value())))
        _poll_until(p, lambda: len(reports) == 3, 8)
        assert [(err.code(), value) for _, err, value in reports] == [
            (E._MSG_TIMED_OUT, b"late0"), (E._MSG_TIMED_OUT, b"late1"),
            (E._MSG_TIMED_OUT, b"late2")]
        assert all(2.4 <= at <= 3.6 for at, _, _ in reports), reports
        assert threads and threads[0] not in (threading.current_thread().name,) \
            and not threads[0].startswith("kafka_fast-io"), threads

        release.set()
        delivered: list = []
        p.produce(topic, b"after", on_delivery=lambda err, msg: delivered.append(
            (err, msg.partition(), msg.offset(), msg.value())))
        _poll_until(p, lambda: bool(delivered), 20)
    assert delivered == [(None, 0, 0, b"after")]
    assert len(threads) == 1  # the token is cached: one call served every connection


def test_confluent_waits_for_the_first_token_in_its_constructor(apache_kafka):
    """The reference behaviour the migration guide describes: confluent-kafka calls oauth_cb
    while it constructs the client and returns only once the token is set (kafka_fast's
    constructor returns at once; the login waits instead, as the test above shows)."""
    def slow_cb(config):
        time.sleep(2)
        return _token()

    conf = _oauth(apache_kafka).client_config({"oauth_cb": slow_cb})
    started = time.monotonic()
    p = confluent_kafka.Producer(conf)
    waited = time.monotonic() - started
    p.flush(1)
    assert 1.9 <= waited < 8, waited
    started = time.monotonic()
    with Producer(conf):
        assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -5.0, "soon", None],
                         ids=["nan", "inf", "-inf", "past", "str", "none"])
def test_unusable_expiry_is_refused_reported_and_retried(apache_kafka, bad):
    """An expiry that is not a finite time still to come fails the login with _AUTHENTICATION
    naming the expiry (through error_cb); the callback is called again on the next attempt,
    whose good token logs in and delivers the record."""
    topic = unique_topic("oauth-bad")
    create_topic(apache_kafka, topic, 1)
    calls: list[float] = []

    def cb(config):
        calls.append(time.monotonic())
        value, expiry, principal, ext = _token()
        return value, (bad if len(calls) == 1 else expiry), principal, ext

    errors: list = []
    delivered: list = []
    conf = _oauth(apache_kafka).client_config({
        "oauth_cb": cb, "error_cb": errors.append, "enable.idempotence": False,
        "reconnect.backoff.ms": 100, "reconnect.backoff.max.ms": 500})
    with Producer(conf) as p:
        p.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(
            (err, msg.partition(), msg.offset(), msg.value())))
        _poll_until(p, lambda: bool(delivered), 20)
    assert delivered == [(None, 0, 0, b"v")]
    assert len(calls) == 2
    auth = [e for e in errors if e.code() == E._AUTHENTICATION]
    assert auth and TOKEN_FAILURE in auth[0].str(), errors
    assert "expir" in auth[0].str(), auth[0].str()


def test_nan_expiry_reported_as_confluent_reports_it(apache_kafka):
    """Side by side: a refresh whose expiry is NaN reaches error_cb as _AUTHENTICATION
    "Failed to acquire SASL OAUTHBEARER token" with both clients (the first token lives
    4 s: confluent-kafka calls the callback again after 80% of it, kafka_fast when the
    broker's session, bounded by the token's life, makes the connection log in again)."""
    def token_failures(errors: list) -> list:
        return [e for e in errors if e.code() == E._AUTHENTICATION and TOKEN_FAILURE in e.str()]

    def run(client_class) -> tuple[list, int]:
        calls: list[int] = []

        def cb(config):
            calls.append(1)
            value, expiry, principal, ext = _token(life=4)
            return value, (expiry if len(calls) == 1 else math.nan), principal, ext

        errors: list = []
        conf = _oauth(apache_kafka).client_config({"oauth_cb": cb, "error_cb": errors.append})
        p = client_class(conf)
        try:
            end = time.monotonic() + 12
            while time.monotonic() < end and not token_failures(errors):
                p.poll(0.1)
                if len(calls) == 1:
                    try:  # keeps connections (and their logins) coming
                        p.list_topics(timeout=2)
                    except (confluent_kafka.KafkaException, KafkaException):
                        pass  # the refresh failed meanwhile: what error_cb gets is checked
        finally:
            p.flush(1)
        return token_failures(errors), len(calls)

    (theirs, their_calls), (ours, our_calls) = run(confluent_kafka.Producer), run(Producer)
    assert theirs and their_calls >= 2, theirs
    assert ours and our_calls >= 2, ours
