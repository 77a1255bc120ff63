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
