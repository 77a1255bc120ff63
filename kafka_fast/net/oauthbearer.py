"""SASL OAUTHBEARER (RFC 7628) tokens: where they come from and when they are renewed.

Tokens come from the application's ``oauth_cb`` (confluent-kafka's contract: called with the
``sasl.oauthbearer.config`` string, returns ``(token, expiry_seconds_since_epoch)`` or
``(token, expiry, principal, extensions)``), or, with
``enable.sasl.oauthbearer.unsecure.jwt=true``, from an unsigned JWT built from
``sasl.oauthbearer.config`` (``principal=... lifeSeconds=... scope=...``), as librdkafka does
for development brokers, or, with ``sasl.oauthbearer.method=oidc``, from an OAuth 2.0 token
endpoint with the client-credentials grant (librdkafka's keys: ``sasl.oauthbearer.client.id``,
``.client.secret``, ``.scope``, ``.extensions``, ``.token.endpoint.url``) or the jwt-bearer
grant (``sasl.oauthbearer.grant.type=urn:ietf:params:oauth:grant-type:jwt-bearer``, a signed
assertion from ``oidc_assertion``), or from Azure's Instance Metadata Service
(``sasl.oauthbearer.metadata.authentication.type=azure_imds``), over HTTPS verified with ``https.ca.location`` or
``https.ca.pem`` when set (the system's CAs otherwise). One ``TokenSource``
per client caches the token and fetches a new one once 80% of its lifetime has passed, so new
connections (and re-authentications) log in with a fresh token.

An ``oauth_cb`` is called as confluent-kafka calls it: once while the client is built, on the
caller's thread (``TokenSource.prime``; a callback that raises or returns something unusable
fails the constructor with ``KafkaException`` SASL_AUTHENTICATION_FAILED), then again on a
timer of the client once 80% of the token's lifetime has passed, 10 s after a failed refresh
(``TokenSource.start_refresh``; a failure reaches ``error_cb`` as ``_AUTHENTICATION``).

Tokens from ``oauth_cb`` and from a token endpoint are fetched on a short-lived worker thread
(``token_async``): the connection waits in its AUTH state, the I/O thread goes on serving
other connections and keeping deadlines (a record's ``message.timeout.ms`` among them), and
the result comes back through ``IOLoop.call_soon``. The HTTP request (urllib) is bounded by a
timeout; concurrent connections share one fetch. A callback that raises or returns something
unusable (an expiry that is NaN, infinite, already past or not a number) gives no token: the
login fails with ``_AUTHENTICATION`` (reported through ``error_cb``) and the callback is called
again on the next connection attempt.
"""

from __future__ import annotations

import base64
import json
import math
import numbers
import os
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from .oidc_assertion import JWT_BEARER, AssertionFailure, JwtAssertion

#: Share of a token's lifetime after which a new one is fetched.
REFRESH_AT = 0.8
#: Wait before calling ``oauth_cb`` again after a failed refresh (seconds; librdkafka's).
RETRY_AFTER_FAILURE = 10.0
#: Longest wait for a token endpoint's answer (seconds; lowered to the connection set-up
#: timeout when that is shorter).
OIDC_TIMEOUT = 20.0


class OAuthError(Exception):
    """No usable token (the callback failed or returned something unusable)."""


@dataclass(frozen=True)
class OAuthToken:
    value: str
    expiry: float  # seconds since the epoch
    principal: str = ""
    extensions: dict[str, str] = field(default_factory=dict)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _parse_settings(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split():
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise OAuthError(f"sasl.oauthbearer.config: expected name=value, got {part!r}")
        out[name] = value
    return out


def unsecured_jwt(settings_text: str, now: float | None = None) -> OAuthToken:
    """An unsigned JWT (``alg: none``) for ``principal=NAME [lifeSeconds=N] [scope=A,B]
    [scopeClaimName=scope] [principalClaimName=sub] [extension_NAME=VALUE]``."""
    settings = _parse_settings(settings_text)
    principal = settings.get("principal")
    if not principal:
        raise OAuthError("sasl.oauthbearer.config must name a principal=... for an unsecured JWT")
    try:
        life = int(settings.get("lifeSeconds", "3600"))
    except ValueError:
        raise OAuthError("sasl.oauthbearer.config: lifeSeconds must be an integer") from None
    issued = int(time.time() if now is None else now)
    claims: dict[str, Any] = {settings.get("principalClaimName", "sub"): principal,
                              "iat": issued, "exp": issued + life}
    if "scope" in settings:
        claims[settings.get("scopeClaimName", "scope")] = settings["scope"].split(",")
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(claims, separators=(",", ":")).encode())
    extensions = {name[len("extension_"):]: value for name, value in settings.items()
                  if name.startswith("extension_")}
    return OAuthToken(f"{header}.{payload}.", float(issued + life), principal, extensions)


def _from_callback(result: Any) -> OAuthToken:
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 4):
        raise OAuthError("oauth_cb must return (token, expiry) or "
                         f"(token, expiry, principal, extensions), not {result!r}")
    token, expiry = result[0], result[1]
    if not isinstance(token, str) or not token:
        raise OAuthError("oauth_cb returned an empty or non-str token")
    if isinstance(expiry, bool) or not isinstance(expiry, numbers.Real) \
            or not math.isfinite(expiry):
        raise OAuthError("oauth_cb returned an expiry that is not a finite number of seconds "
                         f"since the epoch: {expiry!r}")
    principal, extensions = (result[2], result[3]) if len(result) == 4 else ("", {})
    if principal is not None and not isinstance(principal, str):
        raise OAuthError(f"oauth_cb returned a principal that is not a str: {principal!r}")
    if extensions is not None and not (
            isinstance(extensions, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in extensions.items())):
        raise OAuthError("oauth_cb returned extensions that are not a dict of str to str: "
                         f"{extensions!r}")
    return OAuthToken(token, float(expiry), principal or "", dict(extensions or {}))


def _callback_fetch(callback: Callable[[str], Any], settings: str) -> Callable[[], OAuthToken]:
    """The token fetch of an application's ``oauth_cb``: its exceptions become OAuthErrors."""
    def fetch() -> OAuthToken:
        try:
            result = callback(settings)
        except Exception as exc:
            raise OAuthError(f"oauth_cb raised {exc!r}") from None
        return _from_callback(result)
    return fetch


def _parse_extensions(text: str) -> dict[str, str]:
    """librdkafka's ``sasl.oauthbearer.extensions``: ``key=value,key2=value2``."""
    out: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise ConfigError(f"sasl.oauthbearer.extensions: expected key=value, got {part!r}")
        out[name] = value
    return out


def jwt_claims(token: str) -> dict[str, Any]:
    """The claims of a JWS/JWT in compact form (no signature check: the broker checks)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise OAuthError("the access token is not a JWT (expected three dot-separated parts)")
    payload = parts[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, UnicodeDecodeError) as exc:
        raise OAuthError(f"the access token's JWT payload is unreadable: {exc}") from None
    if not isinstance(claims, dict):
        raise OAuthError("the access token's JWT payload is not a JSON object")
    return claims


class OidcClientCredentials:
    """Fetches tokens from an OAuth 2.0 token endpoint with the client-credentials grant, as
    librdkafka's ``sasl.oauthbearer.method=oidc`` does: a form POST of
    ``grant_type=client_credentials`` (and ``scope``) with the client id and secret as HTTP
    Basic credentials. The token's lifetime is ``expires_in`` (or the JWT's ``exp`` claim,
    the earlier of both when both are given), its principal the JWT's ``sub`` claim (or the
    claim ``sasl.oauthbearer.sub.claim.name`` names)."""

    #: Fields of the answer holding the token, tried in order.
    token_fields: tuple[str, ...] = ("access_token",)

    def __init__(self, url: str, client_id: str, client_secret: str, scope: str = "",
                 extensions: Mapping[str, str] | None = None, timeout: float = OIDC_TIMEOUT,
                 clock: Callable[[], float] = time.time, *,
                 context: ssl.SSLContext | None = None, sub_claim: str = "sub") -> None:
        self.url = url
        self.context = context
        self.sub_claim = sub_claim
        self.client_id = client_id
        self._secret = client_secret
        self.scope = scope
        self.extensions = dict(extensions or {})
        self.timeout = timeout
        self._clock = clock

    def _now(self) -> float:
        return self._clock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(url={self.url!r}, client_id={self.client_id!r})"

    def request(self) -> urllib.request.Request:
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        credentials = base64.b64encode(
            f"{self.client_id}:{self._secret}".encode()).decode("ascii")
        return urllib.request.Request(
            self.url, data=urllib.parse.urlencode(form).encode("ascii"), method="POST",
            headers={"Authorization": f"Basic {credentials}", "Accept": "application/json",
                     "Content-Type": "application/x-www-form-urlencoded"})

    def __call__(self) -> OAuthToken:
        url = self.url
        started = self._clock()
        try:
            request = self.request()
            with urllib.request.urlopen(request, timeout=self.timeout,
                                        context=self.context) as resp:
                body = resp.read(1 << 20)
        except urllib.error.HTTPError as exc:
            detail = exc.read(300).decode("utf-8", "replace").strip() if exc.fp else ""
            raise OAuthError(f"token endpoint {url} answered HTTP {exc.code} {exc.reason}"
                             + (f": {detail}" if detail else "")) from None
        except urllib.error.URLError as exc:
            raise OAuthError(f"token endpoint {url} unreachable: {exc.reason}") from None
        except (OSError, ValueError) as exc:  # timeouts, resets, bad URLs
            raise OAuthError(f"token endpoint {url} failed: {exc}") from None
        except AssertionFailure as exc:
            raise OAuthError(f"no JWT assertion for token endpoint {url}: {exc}") from None
        return self.parse(body, started)

    def parse(self, body: bytes, now: float) -> OAuthToken:
        url = self.url
        try:
            answer = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise OAuthError(f"token endpoint {url} returned malformed JSON: {exc}") from None
        if not isinstance(answer, dict):
            raise OAuthError(f"token endpoint {url} returned malformed JSON: not an object")
        token, claims = self._token_of(answer)
        expiries = []
        expires_in = answer.get("expires_in")
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool):
            expiries.append(now + float(expires_in))
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            expiries.append(float(exp))
        if not expiries:
            raise OAuthError(f"token endpoint {url}: the token has neither expires_in nor exp")
        principal = claims.get(self.sub_claim)
        if not isinstance(principal, str) or not principal:
            raise OAuthError(f"token endpoint {url}: the token's JWT has no {self.sub_claim} "
                             "claim")
        return OAuthToken(token, min(expiries), principal, dict(self.extensions))

    def _token_of(self, answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """The first usable JWT among ``token_fields`` of the answer, and its claims."""
        url, last = self.url, f"returned no {' or '.join(self.token_fields)}"
        for name in self.token_fields:
            token = answer.get(name)
            if not isinstance(token, str) or not token:
                continue
            try:
                return token, jwt_claims(token)
            except OAuthError as exc:
                last = f"{name}: {exc}"
        raise OAuthError(f"token endpoint {url} {last}" if last.startswith("returned")
                         else f"token endpoint {url}: {last}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OidcClientCredentials:
        """The fetch for ``sasl.oauthbearer.metadata.authentication.type=azure_imds``, else
        for ``sasl.oauthbearer.grant.type`` (client credentials or jwt-bearer)."""
        url = config["sasl.oauthbearer.token.endpoint.url"]
        client_id = config["sasl.oauthbearer.client.id"]
        jwt_bearer = config.get("sasl.oauthbearer.grant.type", "").lower() == JWT_BEARER
        if config.get("sasl.oauthbearer.metadata.authentication.type") == "azure_imds":
            return OidcAzureImds.from_config(config)
        if not url or not (client_id or jwt_bearer):
            raise ConfigError("sasl.oauthbearer.method=oidc needs "
                              "sasl.oauthbearer.token.endpoint.url and "
                              "sasl.oauthbearer.client.id")
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"sasl.oauthbearer.token.endpoint.url must be an http(s) URL, "
                              f"not {url!r}")
        timeout = min(OIDC_TIMEOUT, config["socket.connection.setup.timeout.ms"] / 1000.0)
        options: dict[str, Any] = {"context": https_context(config),
                                   "sub_claim": config.get("sasl.oauthbearer.sub.claim.name")
                                   or "sub"}
        extensions = _parse_extensions(config["sasl.oauthbearer.extensions"])
        if jwt_bearer:
            return OidcJwtBearer(url, JwtAssertion(config), client_id,
                                 config["sasl.oauthbearer.client.secret"],
                                 config["sasl.oauthbearer.scope"], extensions, timeout,
                                 **options)
        return cls(url, client_id, config["sasl.oauthbearer.client.secret"],
                   config["sasl.oauthbearer.scope"], extensions, timeout, **options)


class OidcJwtBearer(OidcClientCredentials):
    """The jwt-bearer grant (RFC 7523) as librdkafka sends it: a form POST of
    ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``, a freshly made ``assertion``
    (and ``scope``); the token is the answer's ``access_token``, else its ``id_token``. When
    ``sasl.oauthbearer.client.id`` is set, the client id and secret go with it as HTTP Basic
    credentials (RFC 7523 allows client authentication beside the grant, and some identity
    providers require it); librdkafka sends none."""

    token_fields = ("access_token", "id_token")

    def __init__(self, url: str, assertion: JwtAssertion, client_id: str = "",
                 client_secret: str = "", scope: str = "",
                 extensions: Mapping[str, str] | None = None, timeout: float = OIDC_TIMEOUT,
                 clock: Callable[[], float] = time.time, **options: Any) -> None:
        super().__init__(url, client_id, client_secret, scope, extensions, timeout, clock,
                         **options)
        self.assertion = assertion

    def request(self) -> urllib.request.Request:
        request = super().request()
        form = {"grant_type": JWT_BEARER, "assertion": self.assertion.make(self._now())}
        if self.scope:
            form["scope"] = self.scope
        request.data = urllib.parse.urlencode(form).encode("ascii")
        if not self.client_id:
            request.remove_header("Authorization")
        return request


#: Azure's Instance Metadata Service token URL, librdkafka's default for azure_imds.
AZURE_IMDS_URL = "http://169.254.169.254/metadata/identity/oauth2/token"


def config_value(text: str, name: str) -> str | None:
    """The value of ``name`` in librdkafka's comma-separated ``key=value`` list (as
    ``sasl.oauthbearer.config`` is read for metadata authentication); None if absent."""
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip() == name:
            return value.strip()
    return None


def append_query(url: str, query: str) -> str:
    """``url`` with ``query`` (already URL-encoded) appended to its query and its fragment
    dropped, as librdkafka builds the Azure IMDS URL with curl's URL API."""
    parts = urllib.parse.urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise ConfigError(f"sasl.oauthbearer.token.endpoint.url {url!r} is not a URL")
    joined = f"{parts.query}&{query}" if parts.query else query
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path or "/", joined, ""))


class OidcAzureImds(OidcClientCredentials):
    """Tokens from Azure's Instance Metadata Service (managed identities), as librdkafka
    fetches them for ``sasl.oauthbearer.metadata.authentication.type=azure_imds``: a GET of
    ``sasl.oauthbearer.token.endpoint.url`` (default ``AZURE_IMDS_URL``) with the ``query``
    of ``sasl.oauthbearer.config`` (e.g. ``query=api-version=2018-02-01&resource=...``)
    appended, headers ``Metadata: true`` and ``Accept: application/json``, no client
    credentials; the answer's ``access_token`` is the token."""

    def __init__(self, url: str, extensions: Mapping[str, str] | None = None,
                 timeout: float = OIDC_TIMEOUT, clock: Callable[[], float] = time.time,
                 **options: Any) -> None:
        super().__init__(url, "", "", "", extensions, timeout, clock, **options)

    def request(self) -> urllib.request.Request:
        return urllib.request.Request(self.url, method="GET", headers={
            "Metadata": "true", "Accept": "application/json"})

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> OidcAzureImds:
        url = config["sasl.oauthbearer.token.endpoint.url"]
        query = config_value(config["sasl.oauthbearer.config"], "query")
        if not url and not query:
            raise ConfigError("sasl.oauthbearer.token.endpoint.url is mandatory for Azure "
                              "IMDS authentication when sasl.oauthbearer.config has no "
                              "query=...")
        url = url or AZURE_IMDS_URL
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"sasl.oauthbearer.token.endpoint.url must be an http(s) URL, "
                              f"not {url!r}")
        if query:
            url = append_query(url, query)
        timeout = min(OIDC_TIMEOUT, config["socket.connection.setup.timeout.ms"] / 1000.0)
        return cls(url, _parse_extensions(config["sasl.oauthbearer.extensions"]), timeout,
                   context=https_context(config),
                   sub_claim=config.get("sasl.oauthbearer.sub.claim.name") or "sub")


def https_context(config: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The context verifying the token endpoint's HTTPS with ``https.ca.location`` (a PEM
    file, a directory of hashed certificates, or ``probe`` for the system's) or
    ``https.ca.pem``; None (urllib's default, the system's CAs) when neither is set."""
    location, pem = config.get("https.ca.location", ""), config.get("https.ca.pem", "")
    if location and pem:
        raise ConfigError('"https.ca.location" and "https.ca.pem" are mutually exclusive')
    if not (location or pem):
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    key = "https.ca.location" if location else "https.ca.pem"
    try:
        if location == "probe":
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        elif location and os.path.isdir(location):
            ctx.load_verify_locations(capath=location)
        elif location:
            ctx.load_verify_locations(cafile=location)
        elif "-----BEGIN CERTIFICATE-----" not in pem:
            raise ConfigError('"https.ca.pem" holds no PEM certificate')
        else:
            ctx.load_verify_locations(cadata=pem)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f'cannot load the CA certificates of "{key}": {exc}') from None
    return ctx


#: What ``TokenSource.token_async`` hands its callback: a token or the reason there is none.
TokenResult = OAuthToken | OAuthError


class TokenSource:
    """The current token of one client, fetched again once 80% of its lifetime passed.

    ``blocking`` sources (application code: ``oauth_cb``; a token endpoint) are meant to be
    used through ``token_async``, which fetches on a worker thread; the others (an unsecured
    JWT built locally) are called where they are needed.
    """

    def __init__(self, fetch: Callable[[], OAuthToken],
                 clock: Callable[[], float] = time.time, *, blocking: bool = False,
                 eager: bool = False) -> None:
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._token: OAuthToken | None = None
        self._refresh_at = 0.0
        self._waiters: list[Callable[[TokenResult], object]] = []
        self._fetching = False
        self.blocking = blocking
        #: Fetched while the client is built and renewed on a timer (``oauth_cb``).
        self.eager = eager
        self._stop = threading.Event()
        #: Tokens fetched so far (for statistics and tests).
        self.fetched = 0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TokenSource:
        settings = config["sasl.oauthbearer.config"]
        callback = config["oauth_cb"]
        if callback is not None:
            return cls(_callback_fetch(callback, settings), blocking=True, eager=True)
        if config.get("sasl.oauthbearer.method", "default") == "oidc":
            return cls(OidcClientCredentials.from_config(config), blocking=True)
        if config["enable.sasl.oauthbearer.unsecure.jwt"]:
            return cls(lambda: unsecured_jwt(settings))
        raise ConfigError("sasl.mechanism OAUTHBEARER needs an oauth_cb, "
                         "sasl.oauthbearer.method=oidc with a token endpoint, or "
                         "enable.sasl.oauthbearer.unsecure.jwt=true with "
                         "sasl.oauthbearer.config")

    def _cached(self, now: float) -> OAuthToken | None:
        if self._token is None or now >= self._refresh_at:
            return None
        return self._token

    def _store(self, token: OAuthToken, now: float) -> OAuthToken:
        if token.expiry <= now:
            raise OAuthError(f"the token expired already (expiry {token.expiry:.0f})")
        self._token = token
        self._refresh_at = now + REFRESH_AT * (token.expiry - now)
        self.fetched += 1
        return token

    def token(self) -> OAuthToken:
        """The cached token, or a new one when the cached one is due for refresh."""
        with self._lock:
            now = self._clock()
            cached = self._cached(now)
            if cached is not None:
                return cached
            return self._store(self._fetch(), now)

    def token_async(self, done: Callable[[TokenResult], object]) -> None:
        """Call ``done`` with the token (or the ``OAuthError`` saying why there is none):
        at once with a cached token, else from a worker thread once a fetch ends. One fetch
        serves every caller waiting for it."""
        with self._lock:
            cached = self._cached(self._clock())
            if cached is None:
                self._waiters.append(done)
                if self._fetching:
                    return
                self._fetching = True
        if cached is not None:
            done(cached)
            return
        threading.Thread(target=self._fetch_for_waiters, name="kafka_fast-oauth",
                         daemon=True).start()

    def _fetch_for_waiters(self) -> None:
        now = self._clock()
        result: TokenResult
        try:
            token = self._fetch()
        except OAuthError as exc:
            result = exc
        except Exception as exc:  # a failing fetch must still answer its waiters
            result = OAuthError(f"token fetch failed: {exc!r}")
        else:
            result = token
        with self._lock:
            if isinstance(result, OAuthToken):
                try:
                    self._store(result, now)
                except OAuthError as exc:
                    result = exc
            waiters, self._waiters = self._waiters, []
            self._fetching = False
        for done in waiters:
            done(result)

    def prime(self) -> OAuthToken:
        """Fetch the first token on the calling thread (raises ``OAuthError``)."""
        return self.token()

    def start_refresh(self, on_failure: Callable[[OAuthError], object],
                      alive: Callable[[], bool] = lambda: True) -> None:
        """Renew the token on a thread of its own once 80% of its lifetime has passed
        (``RETRY_AFTER_FAILURE`` seconds after a failure, reported to ``on_failure``) until
        ``stop_refresh``, or until ``alive()`` is false when a renewal is due."""
        threading.Thread(target=self._refresh_forever, args=(on_failure, alive),
                         name="kafka_fast-oauth-refresh", daemon=True).start()

    def stop_refresh(self) -> None:
        """End the renewals (idempotent)."""
        self._stop.set()

    def _renew(self) -> TokenResult:
        """A new token (the cached one is due), through ``token_async``'s shared fetch."""
        results: list[TokenResult] = []
        done = threading.Event()

        def settle(result: TokenResult) -> None:
            results.append(result)
            done.set()

        self.token_async(settle)
        done.wait()
        return results[0]

    def _refresh_forever(self, on_failure: Callable[[OAuthError], object],
                         alive: Callable[[], bool]) -> None:
        delay = max(0.0, self._refresh_at - self._clock())
        while not self._stop.wait(delay):
            if not alive():
                return
            result = self._renew()
            if self._stop.is_set():
                return
            if isinstance(result, OAuthError):
                on_failure(result)
                delay = RETRY_AFTER_FAILURE
            else:
                delay = max(0.0, self._refresh_at - self._clock())
