"""NAV's mock-oauth2-server as a real identity provider, and an Apache Kafka node whose
OAUTHBEARER listener validates its signed JWTs (and asks for re-authentication).

The jars come from ``tools/fetch_kafka.sh`` (Maven, ``tests/harness/oauth2/pom.xml``) in the
same cache as the broker's. The server issues RS256 JWTs at ``/<issuer>/token`` for the
client-credentials grant (``sub`` = client id) and publishes its keys at ``/<issuer>/jwks``;
its JSON configuration here gives tokens of issuer ``default`` a short lifetime
(``TOKEN_LIFETIME``) and the audience ``kafka`` for ``scope=kafka`` (``elsewhere`` for any
other scope, which the broker then refuses). For the jwt-bearer grant (RFC 7523) it reads the
client's assertion and issues a token with the assertion's ``sub`` and the audience ``kafka``.
``MockOAuth2Server`` can also serve HTTPS with a given PKCS#12 keystore.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import time
import urllib.request
from pathlib import Path

import pytest

from harness.apache_kafka import (
    SUPER_USERS,
    ApacheKafka,
    allow_everything,
    cache_dir,
    create_users,
    java_binary,
    require_apache_kafka,
    start_apache_kafka,
    wait_for_login,
)
from harness.jvm_start import QUICK_OPTIONS
from harness.ports import LOOPBACK, free_port
from harness.process import ManagedProcess

POM = Path(__file__).with_name("oauth2") / "pom.xml"
MAIN = "no.nav.security.mock.oauth2.StandaloneMockOAuth2ServerKt"
START_TIMEOUT = 60.0
ISSUER = "default"
AUDIENCE = "kafka"
#: Seconds a token of issuer ``default`` lives (the broker's re-authentication test renews
#: tokens through it).
TOKEN_LIFETIME = 10
#: Client ids (JWT ``sub``) the OIDC broker treats as super users.
OIDC_CLIENTS = ("kafka-fast-oidc", "librdkafka-oidc", "kafka-fast-assertion",
                "librdkafka-assertion")
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: The OIDC broker's session lifetime (connections.max.reauth.ms).
REAUTH_MS = 6000


def mock_version() -> str:
    match = re.search(r"<mock.oauth2.version>([^<]+)</mock.oauth2.version>", POM.read_text())
    if match is None:
        raise RuntimeError(f"{POM} names no <mock.oauth2.version>")
    return match.group(1)


def mock_libs() -> Path | None:
    libs = cache_dir() / f"mock-oauth2-server-{mock_version()}" / "libs"
    return libs if (libs / ".complete").exists() else None


def require_mock_oauth2() -> Path:
    """The server's jars; skips the test (fails it under CI=true) when they are missing."""
    require_apache_kafka()  # Java, and the same fetch script
    libs = mock_libs()
    if libs is None:
        reason = (f"mock-oauth2-server {mock_version()} jars not cached: run "
                  "tools/fetch_kafka.sh (needs Maven and network access to Maven Central)")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason)
        pytest.skip(reason)
    return libs


def _json_config(keystore: tuple[Path, str] | None = None) -> str:
    def mapping(match: str, audience: str) -> dict:
        return {"requestParam": "scope" if match != "*" else "grant_type", "match": match,
                "claims": {"sub": "${clientId}", "aud": [audience]}}

    # jwt-bearer: the token keeps the assertion's sub (no sub in the mapping's claims).
    assertion = {"requestParam": "grant_type", "match": JWT_BEARER,
                 "claims": {"aud": [AUDIENCE]}}
    config: dict = {"interactiveLogin": False, "tokenCallbacks": [{
        "issuerId": ISSUER, "tokenExpiry": TOKEN_LIFETIME,
        "requestMappings": [assertion, mapping(AUDIENCE, AUDIENCE), mapping("*", "elsewhere")]}]}
    if keystore is not None:
        config["httpServer"] = {"type": "NettyWrapper", "ssl": {
            "keystoreFile": str(keystore[0]), "keystorePassword": keystore[1],
            "keyPassword": keystore[1], "keystoreType": "PKCS12"}}
    return json.dumps(config)


class MockOAuth2Server:
    """One running mock-oauth2-server on a free loopback port; over HTTPS when given a
    PKCS#12 ``keystore`` (path, password) whose certificate names 127.0.0.1."""

    def __init__(self, libs: Path, workdir: Path,
                 keystore: tuple[Path, str] | None = None, ca_file: Path | None = None) -> None:
        self.port = free_port()
        self.scheme = "https" if keystore else "http"
        self.ca_file = ca_file
        self.log_path = workdir / "mock-oauth2-server.log"
        java = java_binary()
        assert java is not None
        self.process = ManagedProcess(
            [java, "-Xmx128m", "-XX:+UseSerialGC", *QUICK_OPTIONS, "-cp", f"{libs}/*",
             MAIN], self.log_path,
            env={"SERVER_PORT": str(self.port), "SERVER_HOSTNAME": LOOPBACK,
                 "JSON_CONFIG": _json_config(keystore)})

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{LOOPBACK}:{self.port}"

    def issuer(self, name: str = ISSUER) -> str:
        return f"{self.base_url}/{name}"

    def token_url(self, name: str = ISSUER) -> str:
        return f"{self.issuer(name)}/token"

    def jwks_url(self, name: str = ISSUER) -> str:
        return f"{self.issuer(name)}/jwks"

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until the JWKS endpoint answers; raise with the server's log if not."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise RuntimeError(f"mock-oauth2-server exited during start-up\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.jwks_url(), timeout=2,
                                            context=self._context()) as resp:
                    if json.loads(resp.read()).get("keys"):
                        return
            except (OSError, ValueError) as exc:
                last = exc
            time.sleep(0.2)
        raise TimeoutError(f"mock-oauth2-server not ready on port {self.port} within "
                           f"{timeout:.0f}s ({last})\n{self.log_tail()}")

    def _context(self) -> ssl.SSLContext | None:
        if self.ca_file is None:
            return None
        return ssl.create_default_context(cafile=str(self.ca_file))

    def stop(self) -> None:
        self.process.stop(grace=5.0)

    def log_tail(self, limit: int = 6000) -> str:
        try:
            return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")
        except OSError as exc:
            return f"<log {self.log_path} unreadable: {exc}>"


def oidc_config(server: MockOAuth2Server, client_id: str = OIDC_CLIENTS[0],
                scope: str = AUDIENCE, **extra) -> dict[str, object]:
    """Client settings for sasl.oauthbearer.method=oidc against ``server``."""
    conf: dict[str, object] = {
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": server.token_url(),
        "sasl.oauthbearer.client.id": client_id,
        "sasl.oauthbearer.client.secret": "any-secret",
    }
    if scope:
        conf["sasl.oauthbearer.scope"] = scope
    conf.update(extra)
    return conf


@pytest.fixture(scope="session")
def mock_oauth2(tmp_path_factory) -> MockOAuth2Server:
    """A mock-oauth2-server for the session (issuer ``default``, tokens of TOKEN_LIFETIME s)."""
    libs = require_mock_oauth2()
    server = MockOAuth2Server(libs, tmp_path_factory.mktemp("mock-oauth2"))
    try:
        server.wait_ready()
    except BaseException:
        server.stop()
        raise
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oidc_kafka(tmp_path_factory, mock_oauth2) -> ApacheKafka:
    """One Apache Kafka node whose SASL_PLAINTEXT listener validates OAUTHBEARER JWTs
    against ``mock_oauth2``'s keys (issuer ``default``, audience ``kafka``), also serves
    SCRAM (users as in ``apache_kafka``), and limits every SASL session to REAUTH_MS
    (connections.max.reauth.ms): clients must re-authenticate or be disconnected.
    ``OIDC_CLIENTS`` are super users."""
    require_apache_kafka()
    server = mock_oauth2
    prefix = "listener.name.sasl.oauthbearer."
    settings = {
        prefix + "sasl.server.callback.handler.class":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        prefix + "sasl.jaas.config":
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ;",
        "sasl.oauthbearer.jwks.endpoint.url": server.jwks_url(),
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": server.issuer(),
        "connections.max.reauth.ms": str(REAUTH_MS),
        "super.users": ";".join([SUPER_USERS, *(f"User:{c}" for c in OIDC_CLIENTS)]),
    }
    allowed = f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={server.jwks_url()}," \
              f"{server.token_url()}"
    cluster = start_apache_kafka(tmp_path_factory.mktemp("oidc-kafka"), brokers=1,
                                 secure=True, settings=settings, jvm_options=(allowed,))
    try:
        create_users(cluster)
        allow_everything(cluster, "alice")
        wait_for_login(cluster.as_user("alice", "SCRAM-SHA-512"))
    except BaseException as exc:
        log = cluster.log_tail()
        cluster.stop()
        raise RuntimeError(f"OIDC broker set-up failed: {exc}\n{log}") from exc
    yield cluster
    cluster.discard()
