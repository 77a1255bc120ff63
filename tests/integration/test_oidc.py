"""OAUTHBEARER with sasl.oauthbearer.method=oidc against a real identity provider (NAV's
mock-oauth2-server) and an Apache Kafka listener validating its signed JWTs: records go
through, an unreachable token endpoint and a token the broker refuses reach error_cb as
_AUTHENTICATION with the reason, tokens are renewed after 80% of their lifetime, and
confluent-kafka (librdkafka's own OIDC support) works with the same settings."""

from __future__ import annotations

import threading
import time

import pytest
from harness import create_topic, unique_topic
from harness.oauth2 import OIDC_CLIENTS, TOKEN_LIFETIME, oidc_config
from harness.ports import LOOPBACK, free_port

from kafka_fast import Consumer, Producer, TopicPartition
from kafka_fast.errors import KafkaError
from kafka_fast.net.oauthbearer import OAuthError, OAuthToken, OidcClientCredentials, TokenSource

pytestmark = [pytest.mark.apache, pytest.mark.timeout(180)]


def _sasl(cluster, oidc: dict) -> dict:
    return {"bootstrap.servers": cluster.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", **oidc}


def _produce(conf: dict, topic: str, values: list[bytes]) -> list[tuple[int, bytes]]:
    acked: list[tuple[int, bytes]] = []
    failed: list = []

    def report(err, msg):
        (failed.append(err) if err is not None else acked.append((msg.offset(), msg.value())))

    with Producer({**conf, "linger.ms": 5}) as p:
        for value in values:
            p.produce(topic, value, partition=0, on_delivery=report)
        assert p.flush(30) == 0
    assert not failed, failed
    return sorted(acked)


def _read(conf: dict, topic: str, count: int) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    with Consumer({**conf, "group.id": unique_topic("g"), "enable.auto.commit": False}) as c:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(out) < count and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                out.append((msg.offset(), msg.value()))
    return out


def test_oidc_producer_and_consumer_round_trip(oidc_kafka, mock_oauth2):
    topic = unique_topic("oidc")
    create_topic(oidc_kafka, topic, 1)
    conf = _sasl(oidc_kafka, oidc_config(mock_oauth2,
                                         **{"sasl.oauthbearer.extensions": "traceId=7"}))
    values = [f"oidc-{i}".encode() for i in range(50)]
    acked = _produce(conf, topic, values)
    assert acked == list(enumerate(values))
    assert _read(conf, topic, len(values)) == acked


def _first_error(conf: dict, topic: str) -> KafkaError:
    errors: list[KafkaError] = []
    reports: list = []
    with Producer({**conf, "error_cb": errors.append, "message.timeout.ms": 5000}) as p:
        p.produce(topic, b"x", on_delivery=lambda err, msg: reports.append(err))
        p.flush(15)
    assert len(reports) == 1 and reports[0] is not None
    assert errors, "no error reached error_cb"
    return errors[0]


def test_unreachable_token_endpoint_reaches_error_cb(oidc_kafka, mock_oauth2):
    dead = f"http://{LOOPBACK}:{free_port()}/default/token"
    conf = _sasl(oidc_kafka, oidc_config(
        mock_oauth2, **{"sasl.oauthbearer.token.endpoint.url": dead}))
    err = _first_error(conf, unique_topic("oidc-dead"))
    assert err.code() == KafkaError._AUTHENTICATION
    assert "unreachable" in err.str() and dead in err.str(), err.str()


def test_http_401_and_malformed_answers_reach_error_cb(oidc_kafka, mock_oauth2):
    """A token endpoint refusing the client (HTTP 401) or answering something that is not
    JSON: _AUTHENTICATION with the reason."""
    import http.server

    answers: list = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            status, body = answers[0]
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://{LOOPBACK}:{server.server_address[1]}/default/token"
    try:
        conf = _sasl(oidc_kafka, oidc_config(
            mock_oauth2, **{"sasl.oauthbearer.token.endpoint.url": url}))
        answers.append((401, b'{"error":"invalid_client"}'))
        err = _first_error(conf, unique_topic("oidc-401"))
        assert err.code() == KafkaError._AUTHENTICATION
        assert "HTTP 401" in err.str() and "invalid_client" in err.str(), err.str()
        answers[0] = (200, b"<html>login</html>")
        err = _first_error(conf, unique_topic("oidc-html"))
        assert err.code() == KafkaError._AUTHENTICATION
        assert "malformed JSON" in err.str(), err.str()
    finally:
        server.shutdown()
        server.server_close()


def test_token_for_another_audience_is_refused_by_the_broker(oidc_kafka, mock_oauth2):
    # scope=other gets a validly signed token with aud "elsewhere"; the broker expects "kafka".
    conf = _sasl(oidc_kafka, oidc_config(mock_oauth2, scope="other"))
    err = _first_error(conf, unique_topic("oidc-aud"))
    assert err.code() == KafkaError._AUTHENTICATION, err
    # The broker says why only in its log; the client reports its RFC 7628 error status.
    assert "token rejected" in err.str() and "invalid_token" in err.str(), err.str()


def test_tokens_from_the_endpoint_are_renewed_after_80_percent_of_their_life(mock_oauth2):
    fetch = OidcClientCredentials(mock_oauth2.token_url(), OIDC_CLIENTS[0], "s", "kafka")
    offset = [0.0]
    source = TokenSource(fetch, clock=lambda: time.time() + offset[0], blocking=True)
    first = source.token()
    assert first.principal == OIDC_CLIENTS[0]
    assert time.time() + TOKEN_LIFETIME - 3 < first.expiry <= time.time() + TOKEN_LIFETIME + 1
    offset[0] = 0.7 * TOKEN_LIFETIME
    assert source.token() is first and source.fetched == 1
    offset[0] = 0.85 * TOKEN_LIFETIME
    got: list = []
    done = threading.Event()
    source.token_async(lambda result: (got.append(result), done.set()))
    assert done.wait(20)
    second = got[0]
    assert isinstance(second, OAuthToken) and second.value != first.value
    assert source.fetched == 2 and second.expiry >= first.expiry
    # A dead endpoint answers every waiter with the reason.
    dead = TokenSource(OidcClientCredentials(f"http://{LOOPBACK}:{free_port()}/x/token",
                                             "c", "s", timeout=5), blocking=True)
    got.clear()
    done.clear()
    dead.token_async(lambda result: (got.append(result), done.set()))
    assert done.wait(20) and isinstance(got[0], OAuthError) and "unreachable" in str(got[0])


def test_confluent_kafka_with_the_same_settings(oidc_kafka, mock_oauth2):
    """librdkafka's built-in OIDC and kafka_fast, configured alike, write to one topic and
    each reads every record of both."""
    import confluent_kafka

    topic = unique_topic("oidc-ck")
    create_topic(oidc_kafka, topic, 1)
    conf = _sasl(oidc_kafka, oidc_config(mock_oauth2))
    ours = _produce(conf, topic, [b"kafka_fast-1", b"kafka_fast-2"])
    assert [v for _, v in ours] == [b"kafka_fast-1", b"kafka_fast-2"]

    errors: list = []
    theirs = confluent_kafka.Producer({**conf, "error_cb": errors.append})
    delivered: list = []
    for value in (b"librdkafka-1", b"librdkafka-2"):
        theirs.produce(topic, value, partition=0,
                       on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert theirs.flush(30) == 0, errors
    assert [e for e, _ in delivered] == [None, None], (delivered, errors)
    expected = ours + [(2, b"librdkafka-1"), (3, b"librdkafka-2")]
    assert _read(conf, topic, 4) == expected

    consumer = confluent_kafka.Consumer({**conf, "group.id": unique_topic("g"),
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    seen: list = []
    deadline = time.monotonic() + 30
    while len(seen) < 4 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            seen.append((msg.offset(), msg.value()))
    consumer.close()
    assert seen == expected
