"""SASL mechanisms as small step machines driven by SaslAuthenticate round trips.

``start()`` gives the first client message; ``step(server_bytes)`` gives the next one, or
None once the exchange is complete. Any failure raises ``SaslError`` with a readable reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .gssapi import GssapiError, GssapiMechanism
from .oauthbearer import OAuthError, OAuthToken, TokenSource
from .scram import ScramClient, ScramError


class SaslError(Exception):
    """The SASL exchange failed on the client side (bad server messages or verification)."""


class PlainMechanism:
    """SASL PLAIN (RFC 4616): one message, ``\\0user\\0password``."""

    name = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self._message = b"\0" + username.encode() + b"\0" + password.encode()

    def start(self) -> bytes:
        return self._message

    def step(self, server_bytes: bytes) -> bytes | None:
        return None


class ScramMechanism:
    """SCRAM-SHA-256 / SCRAM-SHA-512: client-first, client-final, verify server-final."""

    def __init__(self, name: str, username: str, password: str,
                 nonce: str | None = None) -> None:
        self.name = name
        self._client = ScramClient(name, username, password, nonce)
        self._round = 0

    def start(self) -> bytes:
        self._round = 1
        return self._client.first_message()

    def step(self, server_bytes: bytes) -> bytes | None:
        try:
            if self._round == 1:
                self._round = 2
                return self._client.final_message(server_bytes)
            if self._round == 2:
                self._round = 3
                self._client.verify_server_final(server_bytes)
                return None
        except (ScramError, UnicodeDecodeError) as exc:
            raise SaslError(f"{self.name}: {exc}") from None
        raise SaslError(f"{self.name}: unexpected extra server message")


class OAuthBearerMechanism:
    """SASL OAUTHBEARER: one client message carrying the bearer token (and extensions)."""

    name = "OAUTHBEARER"

    def __init__(self, token: OAuthToken) -> None:
        parts = [f"auth=Bearer {token.value}"]
        parts += [f"{key}={value}" for key, value in sorted(token.extensions.items())]
        self._message = ("n,," + "".join(f"\x01{p}" for p in parts) + "\x01\x01").encode()

    def start(self) -> bytes:
        return self._message

    def step(self, server_bytes: bytes) -> bytes | None:
        if server_bytes:  # RFC 7628: a non-empty server message is an error report
            raise SaslError(f"OAUTHBEARER token rejected: {server_bytes.decode(errors='replace')}")
        return None


#: A SASL exchange in progress.
SaslMechanism = PlainMechanism | ScramMechanism | OAuthBearerMechanism | GssapiMechanism


def make_mechanism(config: Mapping[str, Any], tokens: TokenSource | None = None,
                   token: OAuthToken | None = None, host: str = "") -> SaslMechanism:
    """A fresh mechanism instance for one connection, from ``sasl.*`` settings (and, for
    OAUTHBEARER, ``token`` when it was fetched already, else the client's token source;
    for GSSAPI, ``host`` is the broker's host name)."""
    name = config["sasl.mechanism"]
    if name == "GSSAPI":
        try:
            return GssapiMechanism(config["sasl.kerberos.service.name"], host,
                                   config["sasl.kerberos.principal"],
                                   config["sasl.kerberos.keytab"])
        except GssapiError as exc:
            raise SaslError(str(exc)) from None
    if name == "OAUTHBEARER":
        if token is not None:
            return OAuthBearerMechanism(token)
        if tokens is None:
            raise SaslError("OAUTHBEARER needs a token source")
        try:
            return OAuthBearerMechanism(tokens.token())
        except OAuthError as exc:
            raise SaslError(f"OAUTHBEARER: {exc}") from None
        except Exception as exc:  # the application's oauth_cb failed
            raise SaslError(f"OAUTHBEARER: oauth_cb raised {exc!r}") from None
    user = config["sasl.username"]
    password = config["sasl.password"]
    if name == "PLAIN":
        return PlainMechanism(user, password)
    if name.startswith("SCRAM-"):
        return ScramMechanism(name, user, password)
    raise SaslError(f"unsupported SASL mechanism {name!r}")
