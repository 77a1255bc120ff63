"""SASL OAUTHBEARER (RFC 7628) tokens: where they come from and when they are renewed.

Tokens come from the application's ``oauth_cb`` (confluent-kafka's contract: called with the
``sasl.oauthbearer.config`` string, returns ``(token, expiry_seconds_since_epoch)`` or
``(token, expiry, principal, extensions)``), or, with
``enable.sasl.oauthbearer.unsecure.jwt=true``, from an unsigned JWT built from
``sasl.oauthbearer.config`` (``principal=... lifeSeconds=... scope=...``), as librdkafka does
for development brokers. One ``TokenSource`` per client caches the token and fetches a new one
once 80% of its lifetime has passed, so new connections log in with a fresh token.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

#: Share of a token's lifetime after which a new one is fetched.
REFRESH_AT = 0.8


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
    try:
        expiry = float(expiry)
    except (TypeError, ValueError):
        raise OAuthError(f"oauth_cb returned a bad expiry {expiry!r}") from None
    principal, extensions = (result[2], result[3]) if len(result) == 4 else ("", {})
    return OAuthToken(token, expiry, principal or "", dict(extensions or {}))


class TokenSource:
    """The current token of one client, fetched again once 80% of its lifetime passed."""

    def __init__(self, fetch: Callable[[], OAuthToken],
                 clock: Callable[[], float] = time.time) -> None:
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._token: OAuthToken | None = None
        self._refresh_at = 0.0
        #: Tokens fetched so far (for statistics and tests).
        self.fetched = 0

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> TokenSource:
        settings = config["sasl.oauthbearer.config"]
        callback = config["oauth_cb"]
        if callback is not None:
            return cls(lambda: _from_callback(callback(settings)))
        if config["enable.sasl.oauthbearer.unsecure.jwt"]:
            return cls(lambda: unsecured_jwt(settings))
        raise ConfigError("sasl.mechanism OAUTHBEARER needs an oauth_cb, or "
                         "enable.sasl.oauthbearer.unsecure.jwt=true with "
                         "sasl.oauthbearer.config")

    def token(self) -> OAuthToken:
        """The cached token, or a new one when the cached one is due for refresh."""
        with self._lock:
            now = self._clock()
            if self._token is None or now >= self._refresh_at:
                token = self._fetch()
                if token.expiry <= now:
                    raise OAuthError(f"the token expired already (expiry {token.expiry:.0f})")
                self._token = token
                self._refresh_at = now + REFRESH_AT * (token.expiry - now)
                self.fetched += 1
            return self._token
