"""``oauth_cb`` against Apache Kafka's OAUTHBEARER listener (unsecured JWTs validated by the
broker), side by side with confluent-kafka where both clients are compared.

As confluent-kafka does, kafka_fast calls the callback once while the client is built (on the
caller's thread: a callback that raises or returns no usable token fails the constructor with
``KafkaException`` SASL_AUTHENTICATION_FAILED) and again on a timer once 80% of the token's
lifetime has passed (a failure reaches ``error_cb`` as ``_AUTHENTICATION``). Later calls run on
a worker thread, so a slow callback holds only the login that waits for its token, while the
I/O thread keeps every deadline."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import confluent_kafka
import pytest
from harness import create_topic, free_port, unique_topic

import kafka_fast
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


def test_slow_renewal_holds_neither_the_io_thread_nor_the_caller(apache_kafka):
    """The constructor's call returns a token due for renewal after 0.4 s; the renewal then
    takes up to 8 s on a worker thread (neither the caller's thread nor the I/O thread):
    meanwhile the logged-in connection goes on writing records, and once the renewal returns
    its token is cached (no further call)."""
    topic = unique_topic("oauth-slow")
    create_topic(apache_kafka, topic, 1)
    release = threading.Event()
    threads: list[str] = []

    def slow_cb(config):
        threads.append(threading.current_thread().name)
        if len(threads) == 1:
            value, _, principal, ext = _token()
            return value, time.time() + 0.5, principal, ext
        release.wait(8)
        return _token()

    delivered: list = []
    conf = _oauth(apache_kafka).client_config({"oauth_cb": slow_cb, "linger.ms": 0})
    with Producer(conf) as p:
        assert threads == [threading.current_thread().name]
        end = time.monotonic() + 5
        while len(threads) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        for i in range(3):
            p.produce(topic, b"v%d" % i, on_delivery=lambda err, msg: delivered.append(
                (err, msg.partition(), msg.offset(), msg.value())))
        _poll_until(p, lambda: len(delivered) == 3, 6)
        assert not release.is_set() and delivered == [
            (None, 0, 0, b"v0"), (None, 0, 1, b"v1"), (None, 0, 2, b"v2")]
        assert len(threads) == 2 and threads[1] != threading.current_thread().name \
            and not threads[1].startswith("kafka_fast-io"), threads
        release.set()
        time.sleep(0.5)
    assert len(threads) == 2  # the renewed token lives 600 s


def test_slow_renewal_keeps_message_timeouts_and_then_logs_in(apache_kafka):
    """The constructor's token is refused by the broker (its JWT has expired) and due for
    renewal after 0.4 s; the renewal takes up to 8 s: records with message.timeout.ms=3000
    fail with _MSG_TIMED_OUT after 3 s (within 20%) while the next login waits for it, not
    when the callback returns; once it returns the connection logs in with its token and the
    next record is written."""
    topic = unique_topic("oauth-slow-login")
    create_topic(apache_kafka, topic, 1)
    release = threading.Event()
    calls: list[str] = []

    def slow_cb(config):
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            value, _, principal, ext = _token(life=-60)
            return value, time.time() + 0.5, principal, ext
        release.wait(8)
        return _token()

    reports: list = []
    conf = _oauth(apache_kafka).client_config({
        "oauth_cb": slow_cb, "message.timeout.ms": 3000, "linger.ms": 0, "enable.idempotence": False,
        "reconnect.backoff.ms": 100, "reconnect.backoff.max.ms": 200})
    with Producer(conf) as p:
        end = time.monotonic() + 5
        while len(calls) < 2 and time.monotonic() < end:
            time.sleep(0.05)
        started = time.monotonic()
        for i in range(3):
            p.produce(topic, b"late%d" % i, on_delivery=lambda err, msg: reports.append(
                (time.monotonic() - started, err, msg.value())))
        _poll_until(p, lambda: len(reports) == 3, 8)
        assert [(err.code(), value) for _, err, value in reports] == [
            (E._MSG_TIMED_OUT, b"late0"), (E._MSG_TIMED_OUT, b"late1"),
            (E._MSG_TIMED_OUT, b"late2")]
        assert all(2.4 <= at <= 3.6 for at, _, _ in reports), reports
        release.set()
        delivered: list = []
        p.produce(topic, b"after", on_delivery=lambda err, msg: delivered.append(
            (err, msg.partition(), msg.offset(), msg.value())))
        _poll_until(p, lambda: bool(delivered), 20)
    assert delivered == [(None, 0, 0, b"after")]
    assert len(calls) == 2


def test_both_wait_for_the_first_token_in_their_constructors(apache_kafka):
    """confluent-kafka and kafka_fast call oauth_cb once while they construct the client and
    return only once the token is set (kafka_fast on the caller's thread); the token logs in
    and the record is delivered."""
    def run(client_class) -> tuple[float, list[str], list]:
        threads: list[str] = []

        def slow_cb(config):
            threads.append(threading.current_thread().name)
            time.sleep(1)
            return _token()

        started = time.monotonic()
        p = client_class(_oauth(apache_kafka).client_config({"oauth_cb": slow_cb}))
        waited = time.monotonic() - started
        calls = list(threads)
        delivered: list = []
        p.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(
            (err, msg.partition(), msg.value())))
        p.flush(20)
        return waited, calls, delivered

    topic = unique_topic("oauth-first")
    create_topic(apache_kafka, topic, 1)
    (their_wait, their_calls, theirs), (our_wait, our_calls, ours) = (
        run(confluent_kafka.Producer), run(Producer))
    assert 0.9 <= their_wait < 8 and 0.9 <= our_wait < 8, (their_wait, our_wait)
    assert len(their_calls) == 1 and our_calls == [threading.current_thread().name]
    assert theirs == ours == [(None, 0, b"v")]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -5.0, "soon", None],
                         ids=["nan", "inf", "-inf", "past", "str", "none"])
def test_unusable_expiry_fails_the_constructor(apache_kafka, bad):
    """An expiry that is not a finite time still to come fails the constructor with
    SASL_AUTHENTICATION_FAILED naming the expiry; the next client calls the callback again,
    and its good token logs in and delivers the record."""
    topic = unique_topic("oauth-bad")
    create_topic(apache_kafka, topic, 1)
    calls: list[float] = []

    def cb(config):
        calls.append(time.monotonic())
        value, expiry, principal, ext = _token()
        return value, (bad if len(calls) == 1 else expiry), principal, ext

    delivered: list = []
    conf = _oauth(apache_kafka).client_config({"oauth_cb": cb, "enable.idempotence": False})
    with pytest.raises(KafkaException) as refused:
        Producer(conf)
    err = refused.value.args[0]
    assert err.code() == E.SASL_AUTHENTICATION_FAILED and "expir" in err.str(), err
    assert len(calls) == 1
    with Producer(conf) as p:
        p.produce(topic, b"v", on_delivery=lambda err, msg: delivered.append(
            (err, msg.partition(), msg.offset(), msg.value())))
        _poll_until(p, lambda: bool(delivered), 20)
    assert delivered == [(None, 0, 0, b"v")]
    assert len(calls) == 2


def test_nan_expiry_reported_as_confluent_reports_it(apache_kafka):
    """Side by side: a refresh whose expiry is NaN reaches error_cb as _AUTHENTICATION
    "Failed to acquire SASL OAUTHBEARER token" with both clients (the first token lives
    4 s: both call the callback again after 80% of it)."""
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


def _broker_less(callback) -> dict[str, object]:
    return {"bootstrap.servers": f"127.0.0.1:{free_port()}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "cfg",
            "oauth_cb": callback}


def _make(lib, kind: str, conf: dict[str, object]):
    if kind in ("Consumer", "ShareConsumer"):
        conf = dict(conf, **{"group.id": unique_topic("oauth-group")})
    return getattr(lib.admin if kind == "AdminClient" else lib, kind)(conf)


def _close(client) -> None:
    if hasattr(client, "close"):
        client.close()


KINDS = ("Producer", "Consumer", "ShareConsumer", "AdminClient")


def test_each_client_calls_oauth_cb_once_while_built_and_again_on_a_timer():
    """Side by side, no broker needed: each client type of both libraries calls oauth_cb
    (with sasl.oauthbearer.config) once before its constructor returns, and again once 80%
    of the token's 2 s lifetime has passed, without poll()."""
    calls: dict[tuple[str, str], list[str]] = {}
    clients = []

    def callback(name):
        def cb(config):
            calls[name].append(config)
            return "token", time.time() + 2.0
        return cb

    try:
        for kind in KINDS:
            for lib in (confluent_kafka, kafka_fast):
                name = (lib.__name__, kind)
                calls[name] = []
                clients.append(_make(lib, kind, _broker_less(callback(name))))
                assert calls[name] == ["cfg"], name
        end = time.monotonic() + 6
        while time.monotonic() < end and min(map(len, calls.values())) < 2:
            time.sleep(0.1)
        assert {name: got[:2] for name, got in calls.items()} == {
            name: ["cfg", "cfg"] for name in calls}
    finally:
        for client in clients:
            _close(client)


def test_failing_or_malformed_oauth_cb_fails_both_constructors():
    """Side by side: a callback that raises, and one returning a bare string, fail the
    constructor of both libraries with KafkaException SASL_AUTHENTICATION_FAILED
    (confluent-kafka after waiting 10 s for a token, kafka_fast at once)."""
    def raising(config):
        raise RuntimeError("no token today")

    def malformed(config):
        return "just-a-token-string"

    def refusal(lib, callback) -> KafkaError:
        with pytest.raises(lib.KafkaException) as refused:
            lib.Producer(_broker_less(callback))
        return refused.value.args[0]

    theirs: dict[str, Any] = {}
    workers = [threading.Thread(target=lambda cb=cb: theirs.update(
        {cb.__name__: refusal(confluent_kafka, cb)})) for cb in (raising, malformed)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    ours = {cb.__name__: refusal(kafka_fast, cb) for cb in (raising, malformed)}
    assert time.monotonic() - started < 5.0  # at once
    for worker in workers:
        worker.join(30)
    assert time.monotonic() - started >= 9.0  # confluent-kafka waits 10 s for a token
    assert {name: err.code() for name, err in theirs.items()} == {
        name: err.code() for name, err in ours.items()} == {
        "raising": E.SASL_AUTHENTICATION_FAILED, "malformed": E.SASL_AUTHENTICATION_FAILED}
    assert "no token today" in ours["raising"].str()
    assert "just-a-token-string" in ours["malformed"].str()
