"""OAUTHBEARER tokens: the unsecured JWT, oauth_cb results, caching and refresh."""

from __future__ import annotations

import base64
import json

import pytest

from kafka_fast import Producer
from kafka_fast.errors import ConfigError
from kafka_fast.net.oauthbearer import OAuthError, OAuthToken, TokenSource, unsecured_jwt
from kafka_fast.net.sasl import OAuthBearerMechanism, SaslError, make_mechanism


def _claims(token: str) -> dict:
    header, payload, signature = token.split(".")
    assert signature == ""
    pad = "=" * (-len(payload) % 4)
    assert json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))) == {
        "alg": "none"}
    return json.loads(base64.urlsafe_b64decode(payload + pad))


def test_unsecured_jwt_claims():
    token = unsecured_jwt("principal=alice lifeSeconds=60 scope=read,write extension_traceId=7",
                          now=1_700_000_000)
    assert _claims(token.value) == {"sub": "alice", "iat": 1_700_000_000,
                                    "exp": 1_700_000_060, "scope": ["read", "write"]}
    assert (token.expiry, token.principal, token.extensions) == (
        1_700_000_060.0, "alice", {"traceId": "7"})
    with pytest.raises(OAuthError, match="principal"):
        unsecured_jwt("lifeSeconds=60")
    with pytest.raises(OAuthError, match="name=value"):
        unsecured_jwt("principal")


def test_client_first_message_carries_the_token_and_extensions():
    msg = OAuthBearerMechanism(OAuthToken("abc.def.", 1e12, "bob", {"z": "1", "a": "2"})).start()
    assert msg == b"n,,\x01auth=Bearer abc.def.\x01a=2\x01z=1\x01\x01"


def test_tokens_are_cached_and_fetched_again_after_80_percent_of_their_life():
    now = [1000.0]
    calls = []

    def fetch() -> OAuthToken:
        calls.append(now[0])
        return OAuthToken(f"t{len(calls)}", now[0] + 100)

    source = TokenSource(fetch, clock=lambda: now[0])
    assert source.token().value == "t1"
    now[0] = 1079.0
    assert source.token().value == "t1"
    now[0] = 1080.0
    assert source.token().value == "t2" and calls == [1000.0, 1080.0]


def test_oauth_cb_results_and_failures():
    def conf(cb):
        return {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "cfg",
                "oauth_cb": cb, "enable.sasl.oauthbearer.unsecure.jwt": False,
                "sasl.username": "", "sasl.password": ""}

    seen = []
    ok = TokenSource.from_config(conf(lambda c: seen.append(c) or ("tok", 4e9, "p", {"k": "v"})))
    assert make_mechanism(conf(None), ok).start() == b"n,,\x01auth=Bearer tok\x01k=v\x01\x01"
    assert seen == ["cfg"]
    for bad, reason in ((lambda c: "tok", "must return"), (lambda c: ("tok", 1.0), "expired"),
                        (lambda c: 1 / 0, "oauth_cb raised ZeroDivisionError")):
        with pytest.raises(SaslError, match=reason):
            make_mechanism(conf(bad), TokenSource.from_config(conf(bad)))


def test_oauthbearer_without_a_token_source_is_a_config_error():
    with pytest.raises(ConfigError, match="needs an oauth_cb"):
        Producer({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "OAUTHBEARER"})


# -- sasl.oauthbearer.method=oidc ------------------------------------------------------------

def _jwt(claims: dict) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'RS256'})}.{part(claims)}.c2ln"


@pytest.fixture
def token_endpoint():
    """A local HTTP token endpoint answering with ``answers[0]`` (status, body); the requests
    it got are in ``seen``."""
    import http.server
    import threading

    seen: list = []
    answers: list = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append((self.path, self.headers["Authorization"],
                         self.headers["Content-Type"], body.decode()))
            status, payload = answers[0]
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload.encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/realm/token"
    yield url, answers, seen
    server.shutdown()
    server.server_close()


def _oidc_conf(url: str, **extra) -> dict:
    conf = {"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": "", "oauth_cb": None,
            "enable.sasl.oauthbearer.unsecure.jwt": False, "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.token.endpoint.url": url, "sasl.oauthbearer.client.id": "app",
            "sasl.oauthbearer.client.secret": "s3cret", "sasl.oauthbearer.scope": "kafka read",
            "sasl.oauthbearer.extensions": "traceId=7, tenant=a",
            "socket.connection.setup.timeout.ms": 30000}
    conf.update(extra)
    return conf


def test_oidc_client_credentials_request_and_token(token_endpoint):
    import time

    url, answers, seen = token_endpoint
    exp = int(time.time()) + 600
    token = _jwt({"sub": "app", "exp": exp, "aud": "kafka"})
    answers.append((200, json.dumps({"access_token": token, "expires_in": 300,
                                     "token_type": "Bearer"})))
    source = TokenSource.from_config(_oidc_conf(url))
    assert source.blocking
    got = source.token()
    assert (got.value, got.principal, got.extensions) == (token, "app",
                                                          {"traceId": "7", "tenant": "a"})
    assert time.time() + 290 < got.expiry < time.time() + 301  # expires_in before exp
    path, auth, ctype, body = seen[0]
    assert path == "/realm/token" and ctype == "application/x-www-form-urlencoded"
    assert auth == "Basic " + base64.b64encode(b"app:s3cret").decode()
    assert body == "grant_type=client_credentials&scope=kafka+read"
    # Without expires_in the JWT's exp gives the lifetime.
    answers[0] = (200, json.dumps({"access_token": token}))
    assert TokenSource.from_config(_oidc_conf(url)).token().expiry == exp


@pytest.mark.parametrize("status,body,reason", [
    (401, '{"error":"invalid_client"}', "answered HTTP 401 Unauthorized: {\"error\":\"invalid_client\"}"),
    (200, "not json", "returned malformed JSON"),
    (200, '{"token_type":"Bearer"}', "returned no access_token"),
    (200, '{"access_token":"opaque"}', "not a JWT"),
    (200, json.dumps({"access_token": _jwt({"exp": 4e9})}), "no sub claim"),
    (200, json.dumps({"access_token": _jwt({"sub": "x"})}), "neither expires_in nor exp"),
])
def test_oidc_token_endpoint_failures_say_why(token_endpoint, status, body, reason):
    import threading

    url, answers, _ = token_endpoint
    answers.append((status, body))
    source = TokenSource.from_config(_oidc_conf(url))
    with pytest.raises(OAuthError) as info:
        source.token()
    assert reason in str(info.value) and url in str(info.value)
    got: list = []
    done = threading.Event()
    source.token_async(lambda result: (got.append(result), done.set()))
    assert done.wait(10) and isinstance(got[0], OAuthError) and reason in str(got[0])


def test_oidc_needs_an_endpoint_and_a_client_id():
    with pytest.raises(ConfigError, match="token.endpoint.url"):
        TokenSource.from_config(_oidc_conf(""))
    with pytest.raises(ConfigError, match="http"):
        TokenSource.from_config(_oidc_conf("ftp://x/token"))
    with pytest.raises(ConfigError, match="extensions"):
        TokenSource.from_config(_oidc_conf("http://x/token",
                                           **{"sasl.oauthbearer.extensions": "novalue"}))



def _renewing() -> set[object]:
    """The renewal threads alive now (the thread objects: idents are reused)."""
    import threading

    return {t for t in threading.enumerate() if t.name == "kafka_fast-oauth-refresh"}


def test_renewals_end_with_close_and_with_a_client_dropped_unclosed():
    """oauth_cb is renewed on a timer of the client's until close(); a client dropped
    without close() ends them too."""
    import gc
    import time

    calls: list[float] = []

    def cb(_config: str) -> tuple[str, float]:
        calls.append(time.monotonic())
        return "tok", time.time() + 1.0

    conf = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER", "oauth_cb": cb}
    already = _renewing()  # an earlier test's dropped client may still have one, ending later
    p = Producer(conf)
    assert len(calls) == 1  # while the client was built
    p_renewal = _renewing() - already
    assert len(p_renewal) == 1
    time.sleep(1.5)
    assert len(calls) >= 2  # renewed at 80% of the one-second lifetime
    p.close()
    time.sleep(0.2)
    closed_at = len(calls)
    time.sleep(1.5)
    assert len(calls) == closed_at and not p_renewal & _renewing()

    before_q = _renewing()
    q = Producer(conf)
    assert len(calls) == closed_at + 1
    q_renewal = _renewing() - before_q
    assert len(q_renewal) == 1
    del q
    gc.collect()
    time.sleep(1.5)  # the renewal due meanwhile finds the client gone (or closed)
    dropped_at = len(calls)
    time.sleep(1.5)
    assert len(calls) == dropped_at <= closed_at + 2
    assert not q_renewal & _renewing()
