"""SCRAM client (RFC 5802; SCRAM-SHA-256 per RFC 7677, SCRAM-SHA-512 as Kafka uses it).

A small state machine: ``first_message()`` -> send; ``final_message(server_first)`` -> send;
``verify_server_final(server_final)`` checks the server signature. No channel binding
(``n,,`` GS2 header), as Kafka uses it. User names are escaped (``=`` -> ``=3D``,
``,`` -> ``=2C``); the password is used as UTF-8 without SASLprep, as the Java client does.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

HASHES = {"SCRAM-SHA-1": "sha1", "SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096


class ScramError(Exception):
    """The server's SCRAM messages are malformed, report an error, or fail verification."""


def _escape_username(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _parse(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed SCRAM attribute {part!r} in {message!r}")
        out[part[0]] = part[2:]
    return out


class ScramClient:
    """One SCRAM authentication exchange for ``username``/``password``."""

    def __init__(self, mechanism: str, username: str, password: str,
                 nonce: str | None = None) -> None:
        try:
            self._hash = HASHES[mechanism]
        except KeyError:
            raise ValueError(f"unsupported SCRAM mechanism {mechanism!r}") from None
        self.mechanism = mechanism
        self._username = username
        self._password = password.encode("utf-8")
        self._nonce = nonce if nonce is not None else secrets.token_urlsafe(24)
        self._client_first_bare = ""
        self._server_signature = b""
        self.done = False

    def _hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self._hash).digest()

    def first_message(self) -> bytes:
        """client-first-message: ``n,,n=<user>,r=<nonce>``."""
        self._client_first_bare = f"n={_escape_username(self._username)},r={self._nonce}"
        return ("n,," + self._client_first_bare).encode("utf-8")

    def final_message(self, server_first: bytes) -> bytes:
        """client-final-message with the proof, from the server-first-message."""
        text = bytes(server_first).decode("utf-8")
        attrs = _parse(text)
        if "e" in attrs:
            raise ScramError(f"server rejected authentication: {attrs['e']}")
        try:
            nonce, salt_b64, iterations_text = attrs["r"], attrs["s"], attrs["i"]
        except KeyError as exc:
            raise ScramError(f"server-first-message lacks {exc.args[0]!r}: {text!r}") from None
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise ScramError("server nonce does not extend the client nonce")
        try:
            salt = base64.b64decode(salt_b64, validate=True)
            iterations = int(iterations_text)
        except ValueError as exc:
            raise ScramError(f"bad salt or iteration count in {text!r}: {exc}") from None
        if iterations < MIN_ITERATIONS:
            raise ScramError(f"iteration count {iterations} is below {MIN_ITERATIONS}")
        salted = hashlib.pbkdf2_hmac(self._hash, self._password, salt, iterations)
        client_key = self._hmac(salted, b"Client Key")
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_signature = self._hmac(stored_key, auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, client_signature, strict=True))
        server_key = self._hmac(salted, b"Server Key")
        self._server_signature = self._hmac(server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        """Check the server-final-message; raise ``ScramError`` unless it proves the server."""
        text = bytes(server_final).decode("utf-8")
        attrs = _parse(text)
        if "e" in attrs:
            raise ScramError(f"server rejected authentication: {attrs['e']}")
        if "v" not in attrs:
            raise ScramError(f"server-final-message lacks a verifier: {text!r}")
        try:
            signature = base64.b64decode(attrs["v"], validate=True)
        except ValueError:
            raise ScramError(f"bad server signature encoding: {text!r}") from None
        if not self._server_signature or not hmac.compare_digest(signature,
                                                                 self._server_signature):
            raise ScramError("server signature does not match")
        self.done = True
