"""SASL mechanisms as small step machines driven by SaslAuthenticate round trips.

``start()`` gives the first client message; ``step(server_bytes)`` gives the next one, or
None once the exchange is complete. Any failure raises ``SaslError`` with a readable reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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


def make_mechanism(config: Mapping[str, Any]) -> PlainMechanism | ScramMechanism:
    """A fresh mechanism instance for one connection, from ``sasl.*`` settings."""
    name = config["sasl.mechanism"]
    user = config["sasl.username"]
    password = config["sasl.password"]
    if name == "PLAIN":
        return PlainMechanism(user, password)
    if name.startswith("SCRAM-"):
        return ScramMechanism(name, user, password)
    raise SaslError(f"unsupported SASL mechanism {name!r}")
