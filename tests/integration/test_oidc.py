"""OAUTHBEARER with sasl.oauthbearer.method=oidc against a real identity provider (NAV's
mock-oauth2-server) and an Apache Kafka listener validating its signed JWTs: records go
through, an unreachable token endpoint and a token the broker refuses reach error_cb as
_AUTHENTICATION with the reason, tokens are renewed after 80% of their lifetime, and
confluent-kafka (librdkafka's own OIDC support) works with the same settings. The jwt-bearer
grant (a signed assertion, RFC 7523) logs in the same way, and a token endpoint served over
HTTPS is verified with https.ca.location / https.ca.pem."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa, utils
from cryptography.hazmat.primitives.serialization import pkcs12
from harness import create_topic, unique_topic
from harness.certs import make_mtls_files
from harness.oauth2 import (
    JWT_BEARER,
    OIDC_CLIENTS,
    TOKEN_LIFETIME,
    MockOAuth2Server,
    oidc_config,
    require_mock_oauth2,
)
from harness.ports import LOOPBACK, free_port

from kafka_fast import Consumer, Producer, TopicPartition
from kafka_fast.config import make_config
from kafka_fast.errors import ConfigError, KafkaError
from kafka_fast.net.oauthbearer import (
    OAuthError,
    OAuthToken,
    OidcClientCredentials,
    TokenSource,
    jwt_claims,
)

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
    # One frozen clock for the fetch and the cache: the machine's pace does not move "now".
    start = time.time()
    offset = [0.0]
    clock = lambda: start + offset[0]  # noqa: E731
    fetch = OidcClientCredentials(mock_oauth2.token_url(), OIDC_CLIENTS[0], "s", "kafka",
                                  clock=clock)
    source = TokenSource(fetch, clock=clock, blocking=True)
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


# -- the jwt-bearer grant ----------------------------------------------------------------------

def _b64json(part: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def _assertion_conf(server, subject: str, key_pem: str, **extra) -> dict:
    return {"sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": server.token_url(),
            "sasl.oauthbearer.grant.type": JWT_BEARER,
            "sasl.oauthbearer.client.id": subject,
            "sasl.oauthbearer.client.secret": "any-secret",
            "sasl.oauthbearer.scope": "kafka",
            "sasl.oauthbearer.assertion.private.key.pem": key_pem,
            "sasl.oauthbearer.assertion.claim.sub": subject,
            "sasl.oauthbearer.assertion.claim.iss": subject,
            "sasl.oauthbearer.assertion.claim.aud": server.issuer(),
            **extra}


def _rsa_pem(passphrase: str) -> tuple[rsa.RSAPrivateKey, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.BestAvailableEncryption(passphrase.encode()))
    return key, pem.decode()


def test_jwt_bearer_assertion_logs_in_like_librdkafka(oidc_kafka, mock_oauth2, tmp_path):
    """An RS256 assertion signed with an encrypted PEM key: the identity provider exchanges it
    for a token carrying its sub, the broker accepts that token; confluent-kafka, configured
    alike, does the same on the same topic."""
    passphrase = "assertion-passphrase-7c1"
    key, key_pem = _rsa_pem(passphrase)
    conf = _sasl(oidc_kafka, _assertion_conf(
        mock_oauth2, OIDC_CLIENTS[2], key_pem,
        **{"sasl.oauthbearer.assertion.private.key.passphrase": passphrase,
           "sasl.oauthbearer.assertion.claim.jti.include": True,
           "sasl.oauthbearer.assertion.claim.exp.seconds": 120}))
    fetch = OidcClientCredentials.from_config(make_config(conf, "producer"))
    assert passphrase not in repr(fetch) and "PRIVATE" not in repr(fetch)
    # The assertion is what librdkafka builds, and its RS256 signature verifies.
    now = time.time()
    assertion = fetch.request().data.decode()
    form = dict(part.split("=", 1) for part in assertion.split("&"))
    assert form["grant_type"] == JWT_BEARER.replace(":", "%3A") and form["scope"] == "kafka"
    header, payload, signature = form["assertion"].split(".")
    assert _b64json(header) == {"alg": "RS256", "typ": "JWT"}
    claims = _b64json(payload)
    assert claims["sub"] == claims["iss"] == OIDC_CLIENTS[2]
    assert claims["aud"] == mock_oauth2.issuer() and len(claims["jti"]) == 36
    assert abs(claims["iat"] - now) <= 2 and claims["exp"] == claims["iat"] + 120
    assert claims["nbf"] == claims["iat"] - 60
    key.public_key().verify(base64.urlsafe_b64decode(signature + "=="),
                            f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
    token = fetch()
    assert token.principal == OIDC_CLIENTS[2]
    assert jwt_claims(token.value)["aud"] in ("kafka", ["kafka"])

    topic = unique_topic("oidc-assertion")
    create_topic(oidc_kafka, topic, 1)
    values = [f"assertion-{i}".encode() for i in range(20)]
    acked = _produce(conf, topic, values)
    assert acked == list(enumerate(values))
    assert _read(conf, topic, len(values)) == acked

    # librdkafka sends the same grant without client authentication, which this identity
    # provider refuses (HTTP 401 invalid_client); kafka_fast without a client id does too.
    import confluent_kafka
    anonymous = {k: v for k, v in conf.items() if not k.startswith("sasl.oauthbearer.client.")}
    errors: list = []
    theirs = confluent_kafka.Producer({**anonymous, "error_cb": errors.append})
    deadline = time.monotonic() + 30
    while not errors and time.monotonic() < deadline:
        theirs.poll(0.5)
    assert errors and errors[0].code() == confluent_kafka.KafkaError._AUTHENTICATION, errors
    assert "invalid_client" in str(errors[0])
    ours = _first_error(anonymous, topic)
    assert ours.code() == KafkaError._AUTHENTICATION and "invalid_client" in ours.str(), ours


def test_jwt_bearer_es256_from_a_key_file_and_a_template(mock_oauth2, tmp_path):
    key = ec.generate_private_key(ec.SECP256R1())
    key_file = tmp_path / "assertion.key"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    template = tmp_path / "template.json"
    template.write_text(json.dumps({"header": {"kid": "key-1", "alg": "none"},
                                    "payload": {"tenant": "blue", "sub": "overridden",
                                                "exp": 1}}))
    conf = _assertion_conf(mock_oauth2, OIDC_CLIENTS[2], "", **{
        "sasl.oauthbearer.assertion.algorithm": "ES256",
        "sasl.oauthbearer.assertion.private.key.file": str(key_file),
        "sasl.oauthbearer.assertion.jwt.template.file": str(template),
        "sasl.oauthbearer.assertion.claim.nbf.seconds": 5})
    del conf["sasl.oauthbearer.assertion.private.key.pem"]
    fetch = OidcClientCredentials.from_config(make_config(conf, "producer"))
    header, payload, signature = fetch.assertion.make().split(".")
    assert _b64json(header) == {"kid": "key-1", "alg": "ES256", "typ": "JWT"}
    claims = _b64json(payload)
    assert claims["tenant"] == "blue" and claims["sub"] == OIDC_CLIENTS[2]
    assert claims["exp"] == claims["iat"] + 300 and claims["nbf"] == claims["iat"] - 5
    raw = base64.urlsafe_b64decode(signature + "==")
    assert len(raw) == 64
    key.public_key().verify(utils.encode_dss_signature(int.from_bytes(raw[:32], "big"),
                                                       int.from_bytes(raw[32:], "big")),
                            f"{header}.{payload}".encode(), ec.ECDSA(hashes.SHA256()))
    token = fetch()  # the identity provider copies the assertion's claims into the token
    claims = jwt_claims(token.value)
    assert token.principal == OIDC_CLIENTS[2] and claims["tenant"] == "blue"
    # A ready assertion from a file is sent as it is, read again for each token.
    ready = tmp_path / "assertion.jwt"
    ready.write_text(fetch.assertion.make() + "\n")
    by_file = OidcClientCredentials.from_config(make_config(
        {**conf, "sasl.oauthbearer.assertion.file": str(ready)}, "producer"))
    assert by_file().principal == OIDC_CLIENTS[2]
    ready.write_text("not a jwt")
    with pytest.raises(OAuthError, match="assertion.file\" holds no JWT"):
        by_file()
    # Bad settings are refused when the client is made, naming the key, never the secret.
    with pytest.raises(ConfigError, match="ES256 needs a P-256"):
        OidcClientCredentials.from_config(make_config({**conf, "sasl.oauthbearer.assertion"
                                                       ".private.key.file": "",
                                                       "sasl.oauthbearer.assertion.private"
                                                       ".key.pem": _rsa_pem("x")[1],
                                                       "sasl.oauthbearer.assertion.private"
                                                       ".key.passphrase": "x"}, "producer"))
    with pytest.raises(ConfigError, match="exactly one of"):
        Producer({**conf, "sasl.oauthbearer.assertion.private.key.file": "",
                  "bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "OAUTHBEARER"})
    wrong = {**conf, "sasl.oauthbearer.assertion.private.key.file": "",
             "sasl.oauthbearer.assertion.algorithm": "RS256",
             "sasl.oauthbearer.assertion.private.key.pem": _rsa_pem("right-one")[1],
             "sasl.oauthbearer.assertion.private.key.passphrase": "wrong-one"}
    with pytest.raises(ConfigError, match="private.key.passphrase") as info:
        OidcClientCredentials.from_config(make_config(wrong, "producer"))
    assert "wrong-one" not in str(info.value) and "PRIVATE KEY" not in str(info.value)


# -- the token endpoint over HTTPS -------------------------------------------------------------

@pytest.fixture(scope="module")
def https_oauth2(tmp_path_factory):
    """mock-oauth2-server over HTTPS, its certificate (127.0.0.1) from the test CA."""
    libs = require_mock_oauth2()
    workdir = tmp_path_factory.mktemp("https-oauth2")
    files = make_mtls_files(workdir / "certs")
    pem = files.server.read_bytes()
    key = serialization.load_pem_private_key(pem, None)
    certs = x509.load_pem_x509_certificates(pem)
    password = "keystore-pw-3a9"
    keystore = workdir / "server.p12"
    keystore.write_bytes(pkcs12.serialize_key_and_certificates(
        b"server", key, certs[0], certs[1:],
        serialization.BestAvailableEncryption(password.encode())))
    server = MockOAuth2Server(libs, workdir, (keystore, password), files.ca)
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    yield server, files
    server.stop()


def _https_fetch(server, **extra) -> OidcClientCredentials:
    return OidcClientCredentials.from_config(make_config(
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
         **oidc_config(server), **extra}, "producer"))


def test_https_token_endpoint_is_verified_with_https_ca(https_oauth2):
    server, files = https_oauth2
    assert server.token_url().startswith("https://")
    by_file = _https_fetch(server, **{"https.ca.location": str(files.ca)})()
    assert by_file.principal == OIDC_CLIENTS[0]
    assert jwt_claims(by_file.value)["iss"] == server.issuer()
    by_pem = _https_fetch(server, **{"https.ca.pem": files.ca.read_text()})()
    assert by_pem.principal == OIDC_CLIENTS[0]
    # Without them the system's CAs are used, which do not know the test CA.
    with pytest.raises(OAuthError, match="CERTIFICATE_VERIFY_FAILED"):
        _https_fetch(server)()
    with pytest.raises(ConfigError, match="mutually exclusive"):
        _https_fetch(server, **{"https.ca.location": str(files.ca),
                                "https.ca.pem": files.ca.read_text()})
    with pytest.raises(ConfigError, match="https.ca.pem\" holds no PEM certificate"):
        _https_fetch(server, **{"https.ca.pem": "nonsense"})


def test_confluent_kafka_honours_https_ca_location_alike(https_oauth2, oidc_kafka):
    """librdkafka with the same https.ca.location gets a token from the HTTPS endpoint (the
    broker then refuses it: another issuer); without it, no token is fetched. Both clients
    report those two outcomes."""
    import confluent_kafka

    server, files = https_oauth2
    base = _sasl(oidc_kafka, oidc_config(server))
    outcomes = {}
    for label, extra in (("with-ca", {"https.ca.location": str(files.ca)}), ("without", {})):
        errors: list = []
        p = confluent_kafka.Producer({**base, **extra, "error_cb": errors.append})
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            p.poll(0.5)
        ours = _first_error({**base, **extra}, unique_topic("oidc-https"))
        outcomes[label] = (" ".join(str(e) for e in errors), ours.str())
    theirs_ca, ours_ca = outcomes["with-ca"]
    assert "invalid_token" in ours_ca and "certificate" not in ours_ca.lower(), ours_ca
    assert "certificate" not in theirs_ca.lower() and theirs_ca, theirs_ca
    theirs_none, ours_none = outcomes["without"]
    assert "CERTIFICATE_VERIFY_FAILED" in ours_none, ours_none
    # librdkafka's wheel looks for the system's CAs where this system has none.
    assert "certificate" in theirs_none.lower() or "trust anchors" in theirs_none, theirs_none


# -- Azure IMDS (sasl.oauthbearer.metadata.authentication.type=azure_imds) ---------------------

IMDS_QUERY = "api-version=2018-02-01&resource=api%3A%2F%2Fkafka&client_id=kafka-fast-oidc"


@pytest.fixture
def imds_endpoint(mock_oauth2):
    """An HTTP endpoint answering GETs as Azure's IMDS does (JSON with access_token,
    expires_in as a string), handing out real tokens of mock-oauth2-server that the OIDC
    broker accepts; ``requests`` records what each client sent."""
    import http.server
    import urllib.request

    requests: list[dict] = []

    def real_token() -> bytes:
        credentials = base64.b64encode(f"{OIDC_CLIENTS[0]}:any-secret".encode()).decode()
        req = urllib.request.Request(
            mock_oauth2.token_url(), data=b"grant_type=client_credentials&scope=kafka",
            headers={"Authorization": f"Basic {credentials}",
                     "Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(req, timeout=20) as resp:
            answer = json.loads(resp.read())
        return json.dumps({"access_token": answer["access_token"],
                           "expires_in": str(answer["expires_in"]), "token_type": "Bearer",
                           "resource": "api://kafka"}).encode()

    class Imds(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path, _, query = self.path.partition("?")
            requests.append({"method": "GET", "path": path, "query": query,
                             "headers": {k.lower(): v for k, v in self.headers.items()}})
            body = real_token()
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), Imds)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://{LOOPBACK}:{server.server_address[1]}/metadata/identity/oauth2/token"
    yield url, requests
    server.shutdown()
    server.server_close()


def test_azure_imds_tokens_side_by_side_with_confluent_kafka(oidc_kafka, imds_endpoint):
    """Both clients GET the same IMDS URL (the query of sasl.oauthbearer.config appended to
    sasl.oauthbearer.token.endpoint.url) with Metadata: true and no client credentials, and
    log in to the OIDC broker with the token: each one's records are read back exactly."""
    import confluent_kafka

    url, requests = imds_endpoint
    topic = unique_topic("oidc-imds")
    create_topic(oidc_kafka, topic, 1)
    conf = _sasl(oidc_kafka, {"sasl.oauthbearer.method": "oidc",
                              "sasl.oauthbearer.metadata.authentication.type": "azure_imds",
                              "sasl.oauthbearer.token.endpoint.url": url,
                              "sasl.oauthbearer.config": f"query={IMDS_QUERY}"})
    ours = _produce(conf, topic, [b"kafka_fast-imds-1", b"kafka_fast-imds-2"])
    assert ours == [(0, b"kafka_fast-imds-1"), (1, b"kafka_fast-imds-2")]
    assert len(requests) == 1
    errors: list = []
    theirs = confluent_kafka.Producer({**conf, "error_cb": errors.append})
    delivered: list = []
    for value in (b"librdkafka-imds-1", b"librdkafka-imds-2"):
        theirs.produce(topic, value, partition=0,
                       on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert theirs.flush(30) == 0, errors
    assert delivered == [(None, 2), (None, 3)], (delivered, errors)
    ours_sent, theirs_sent = requests[0], requests[1]
    for sent in (ours_sent, theirs_sent):
        assert (sent["method"], sent["path"], sent["query"]) == (
            "GET", "/metadata/identity/oauth2/token", IMDS_QUERY), sent
        assert sent["headers"]["metadata"] == "true", sent
        assert sent["headers"]["accept"] == "application/json", sent
        assert "authorization" not in sent["headers"], sent
    assert _read(conf, topic, 4) == ours + [(2, b"librdkafka-imds-1"),
                                            (3, b"librdkafka-imds-2")]


def test_azure_imds_configuration_as_librdkafka_checks_it(oidc_kafka):
    """The IMDS URL defaults to Azure's when only a query is given; neither a URL nor a query
    is refused by both clients; none is the default and keeps the client-credentials grant;
    aws_iam (no built-in flow in librdkafka either) is refused naming the key."""
    import confluent_kafka

    from kafka_fast.net.oauthbearer import AZURE_IMDS_URL, OidcAzureImds

    base = _sasl(oidc_kafka, {"sasl.oauthbearer.method": "oidc",
                              "sasl.oauthbearer.metadata.authentication.type": "azure_imds"})
    fetch = OidcClientCredentials.from_config(make_config(
        {**base, "sasl.oauthbearer.config": f"query={IMDS_QUERY}"}, "producer"))
    assert isinstance(fetch, OidcAzureImds)
    assert fetch.url == f"{AZURE_IMDS_URL}?{IMDS_QUERY}"
    fetch = OidcClientCredentials.from_config(make_config(
        {**base, "sasl.oauthbearer.token.endpoint.url": "http://h:1/t?a=1#frag",
         "sasl.oauthbearer.config": "query=b=2"}, "producer"))
    assert fetch.url == "http://h:1/t?a=1&b=2"
    with pytest.raises(ConfigError, match="token.endpoint.url is mandatory for Azure IMDS"):
        Producer(base)
    with pytest.raises(confluent_kafka.KafkaException, match="mandatory for Azure IMDS"):
        confluent_kafka.Producer(base)
    plain = {**base, "sasl.oauthbearer.metadata.authentication.type": "none",
             "sasl.oauthbearer.token.endpoint.url": "http://h:1/token",
             "sasl.oauthbearer.client.id": "c", "sasl.oauthbearer.client.secret": "s"}
    assert make_config({}, "producer")["sasl.oauthbearer.metadata.authentication.type"] == "none"
    assert type(OidcClientCredentials.from_config(make_config(plain, "producer"))) \
        is OidcClientCredentials
    with pytest.raises(ConfigError, match="sasl.oauthbearer.metadata.authentication.type"):
        Producer({**base, "sasl.oauthbearer.metadata.authentication.type": "aws_iam"})
