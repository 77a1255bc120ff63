"""The signed JWT a client presents to an OAuth 2.0 token endpoint with the jwt-bearer grant
(RFC 7523), built as librdkafka builds it from its ``sasl.oauthbearer.assertion.*`` keys.

Either the assertion is read, as it is, from ``sasl.oauthbearer.assertion.file`` (read again
for every token, so that a file renewed by another process is picked up), or it is built: the
header and payload of ``sasl.oauthbearer.assertion.jwt.template.file`` (a JSON object with
``header`` and ``payload`` objects) or empty ones; ``alg`` (RS256 or ES256) and ``typ: JWT``
in the header; ``iat`` (now), ``exp`` (now + ``claim.exp.seconds``), ``nbf`` (now -
``claim.nbf.seconds``) and, when set, ``sub``, ``iss``, ``aud`` and a random ``jti`` in the
payload; signed with the PEM private key of ``sasl.oauthbearer.assertion.private.key.file``
or ``.pem`` (decrypted with ``.passphrase``). Signing needs the ``cryptography`` package.
Errors name the key at fault and never carry the key or the passphrase.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
#: Longest assertion or template file read (librdkafka's limit too).
MAX_FILE = 1 << 20


class AssertionFailure(Exception):
    """No assertion could be made (a file unreadable, a template malformed)."""


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _read(path: str, key: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE + 1)
    except OSError as exc:
        raise AssertionFailure(f'"{key}" {path!r} cannot be read: {exc.strerror}') from None
    if len(data) > MAX_FILE:
        raise AssertionFailure(f'"{key}" {path!r} is larger than {MAX_FILE} bytes')
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise AssertionFailure(f'"{key}" {path!r} is not UTF-8 text') from None


class JwtAssertion:
    """Makes the assertion for each token request (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        p = "sasl.oauthbearer.assertion."
        self.file = config[p + "file"]
        self.algorithm = config[p + "algorithm"].upper()
        self.template_file = config[p + "jwt.template.file"]
        self.claims = {name: config[p + "claim." + name]
                       for name in ("sub", "iss", "aud") if config[p + "claim." + name]}
        self.exp_seconds = config[p + "claim.exp.seconds"]
        self.nbf_seconds = config[p + "claim.nbf.seconds"]
        self.jti = config[p + "claim.jti.include"]
        key_file, key_pem = config[p + "private.key.file"], config[p + "private.key.pem"]
        if self.file:
            self._key = None
            return
        if bool(key_file) == bool(key_pem):
            raise ConfigError(f"sasl.oauthbearer.grant.type={JWT_BEARER} needs "
                              f'"{p}file", or exactly one of "{p}private.key.file" and '
                              f'"{p}private.key.pem"')
        try:
            if key_pem:
                pem = key_pem.encode()
            else:
                with open(key_file, "rb") as fh:
                    pem = fh.read(MAX_FILE)
        except OSError as exc:
            raise ConfigError(f'"{p}private.key.file" {key_file!r} cannot be read: '
                              f"{exc.strerror}") from None
        self._key = _load_key(pem, config[p + "private.key.passphrase"], self.algorithm,
                              p + ("private.key.pem" if key_pem else "private.key.file"))

    def __repr__(self) -> str:
        return f"JwtAssertion(algorithm={self.algorithm!r}, file={self.file!r})"

    def make(self, now: float | None = None) -> str:
        """The compact JWS to send as ``assertion``."""
        if self.file:
            text = _read(self.file, "sasl.oauthbearer.assertion.file").strip()
            if text.count(".") != 2:
                raise AssertionFailure('"sasl.oauthbearer.assertion.file" holds no JWT '
                                      "(three dot-separated parts)")
            return text
        header, payload = self._template()
        issued = int(time.time() if now is None else now)
        header.update({"alg": self.algorithm, "typ": "JWT"})
        payload.update({"iat": issued, "exp": issued + self.exp_seconds,
                        "nbf": issued - self.nbf_seconds, **self.claims})
        if self.jti:
            payload["jti"] = str(uuid.uuid4())
        signing_input = ".".join(_b64url(json.dumps(part, separators=(",", ":")).encode())
                                 for part in (header, payload))
        return f"{signing_input}.{_b64url(self._sign(signing_input.encode('ascii')))}"

    def _template(self) -> tuple[dict[str, Any], dict[str, Any]]:
        if not self.template_file:
            return {}, {}
        key = "sasl.oauthbearer.assertion.jwt.template.file"
        try:
            template = json.loads(_read(self.template_file, key))
        except ValueError as exc:
            raise AssertionFailure(f'"{key}" is not JSON: {exc}') from None
        header = template.get("header") if isinstance(template, dict) else None
        payload = template.get("payload") if isinstance(template, dict) else None
        if not isinstance(header, dict) or not isinstance(payload, dict):
            raise AssertionFailure(f'"{key}" must hold a JSON object with "header" and '
                                  '"payload" objects')
        return dict(header), dict(payload)

    def _sign(self, data: bytes) -> bytes:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, padding, utils

        key: Any = self._key
        if self.algorithm == "ES256":
            r, s = utils.decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def _load_key(pem: bytes, passphrase: str, algorithm: str, key: str) -> Any:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
    except ImportError:
        raise ConfigError(f"sasl.oauthbearer.grant.type={JWT_BEARER} with a private key "
                          "needs the cryptography package (pip install cryptography)") from None
    try:
        private = serialization.load_pem_private_key(
            pem, passphrase.encode() if passphrase else None)
    except (ValueError, TypeError):
        raise ConfigError(f'"{key}" holds no PEM private key that can be read (a wrong or '
                          'missing "sasl.oauthbearer.assertion.private.key.passphrase"?)'
                          ) from None
    if algorithm == "ES256":
        if not (isinstance(private, ec.EllipticCurvePrivateKey)
                and private.curve.name == "secp256r1"):
            raise ConfigError(f'"{key}": ES256 needs a P-256 (secp256r1) EC key')
    elif not isinstance(private, rsa.RSAPrivateKey):
        raise ConfigError(f'"{key}": RS256 needs an RSA key')
    return private
