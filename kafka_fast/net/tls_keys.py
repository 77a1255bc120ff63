"""Loading the client's TLS trust and identity into an ``SSLContext``.

Trust: ``ssl.ca.location`` (file) or ``ssl.ca.pem`` (in memory), else the system CAs, and
``ssl.crl.location`` (PEM CRLs, checked for the broker's certificate as librdkafka does).
Identity, one of: ``ssl.certificate.location`` + ``ssl.key.location`` (PEM files),
``ssl.certificate.pem`` + ``ssl.key.pem`` (in memory), or ``ssl.keystore.location`` +
``ssl.keystore.password`` (PKCS#12, read with the ``cryptography`` package). Private keys may
be encrypted (``ssl.key.password``).

Python's ``ssl`` module loads certificates and keys only from files: in-memory and PKCS#12
identities pass through a temporary file that only this user may read (mode 0600), deleted
as soon as ``load_cert_chain`` returns. Error messages name the configuration key, never a
secret.
"""

from __future__ import annotations

import datetime as dt
import os
import ssl
import tempfile
from collections.abc import Mapping
from typing import Any

from ..errors import ConfigError

_PEM_CERT = "-----BEGIN CERTIFICATE-----"


def load_trust(ctx: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """CAs (file, in-memory PEM or the system's) and CRLs."""
    ca_file, ca_pem = config["ssl.ca.location"], config["ssl.ca.pem"]
    if ca_file and ca_pem:
        raise ConfigError('"ssl.ca.location" and "ssl.ca.pem" are mutually exclusive')
    try:
        if ca_file:
            ctx.load_verify_locations(cafile=ca_file)
        elif ca_pem:
            if _PEM_CERT not in ca_pem:
                raise ConfigError('"ssl.ca.pem" holds no PEM certificate')
            ctx.load_verify_locations(cadata=ca_pem)
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot load the CA certificates: {exc}") from None
    crl = config["ssl.crl.location"]
    if crl:
        try:
            ctx.load_verify_locations(cafile=crl)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f'cannot load "ssl.crl.location": {exc}') from None
        ctx.verify_flags |= ssl.VERIFY_CRL_CHECK_LEAF


def load_identity(ctx: ssl.SSLContext, config: Mapping[str, Any]) -> None:
    """The client certificate and key (mutual TLS), from whichever keys are set."""
    cert_file, key_file = config["ssl.certificate.location"], config["ssl.key.location"]
    cert_pem, key_pem = config["ssl.certificate.pem"], config["ssl.key.pem"]
    keystore = config["ssl.keystore.location"]
    given = [name for name, on in (("files", cert_file or key_file),
                                   ("pem", cert_pem or key_pem), ("keystore", keystore)) if on]
    if len(given) > 1:
        raise ConfigError('set only one client identity: "ssl.certificate.location"/'
                          '"ssl.key.location", "ssl.certificate.pem"/"ssl.key.pem" or '
                          '"ssl.keystore.location"')
    password = config["ssl.key.password"] or None
    if cert_file or key_file:
        if not cert_file:
            raise ConfigError('"ssl.key.location" needs "ssl.certificate.location"')
        try:
            with open(cert_file, "rb") as f:
                _check_validity(f.read(), "ssl.certificate.location")
        except OSError as exc:
            raise ConfigError(f'"ssl.certificate.location": {exc.strerror}: {cert_file}') \
                from None
        _load_chain(ctx, lambda: ctx.load_cert_chain(cert_file, key_file or None, password),
                    "ssl.certificate.location")
    elif cert_pem or key_pem:
        if not (cert_pem and key_pem):
            raise ConfigError('"ssl.certificate.pem" and "ssl.key.pem" go together')
        _check_validity(cert_pem.encode(), "ssl.certificate.pem")
        _load_from_memory(ctx, cert_pem.encode() + b"\n" + key_pem.encode(), password,
                          "ssl.certificate.pem")
    elif keystore:
        _load_from_memory(ctx, _pkcs12_to_pem(keystore, config["ssl.keystore.password"]), None,
                          "ssl.keystore.location")


def _load_chain(ctx: ssl.SSLContext, load, key: str) -> None:
    try:
        load()
    except FileNotFoundError as exc:
        raise ConfigError(f'"{key}": {exc.strerror}: {exc.filename}') from None
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            why = "the private key does not match the certificate"
        else:
            why = "the private key cannot be read (a wrong or missing ssl.key.password?)"
        raise ConfigError(f'cannot load the client certificate and key ("{key}"): {why}') \
            from None
    except OSError as exc:
        raise ConfigError(f'cannot load the client certificate and key ("{key}"): '
                          f"{exc.strerror or exc}") from None


def _load_from_memory(ctx: ssl.SSLContext, pem: bytes, password: str | None,
                      key: str) -> None:
    fd, path = tempfile.mkstemp(prefix="kafka-fast-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        _load_chain(ctx, lambda: ctx.load_cert_chain(path, None, password), key)
    finally:
        os.unlink(path)


def _pkcs12_to_pem(location: str, password: str) -> bytes:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise ConfigError('"ssl.keystore.location" (PKCS#12) needs the cryptography package '
                          "(pip install cryptography)") from None
    try:
        with open(location, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ConfigError(f'"ssl.keystore.location": {exc.strerror}: {location}') from None
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(
            data, password.encode() if password else None)
    except ValueError:
        raise ConfigError('cannot open the PKCS#12 keystore "ssl.keystore.location" '
                          "(a wrong ssl.keystore.password, or not a PKCS#12 file)") from None
    if key is None or cert is None:
        raise ConfigError('the PKCS#12 keystore "ssl.keystore.location" holds no private key '
                          "and certificate")
    _check_not_expired(cert.not_valid_before_utc, cert.not_valid_after_utc,
                       "ssl.keystore.location")
    pem = cert.public_bytes(serialization.Encoding.PEM)
    for c in extra or ():
        pem += c.public_bytes(serialization.Encoding.PEM)
    return pem + key.private_bytes(serialization.Encoding.PEM,
                                   serialization.PrivateFormat.PKCS8,
                                   serialization.NoEncryption())


def _check_validity(pem: bytes, key: str) -> None:
    """A clear error for an expired (or not yet valid) client certificate, which a broker
    would refuse with a bare handshake alert. Skipped without the cryptography package."""
    try:
        from cryptography import x509
    except ImportError:
        return
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError:
        return  # not a PEM certificate: load_cert_chain says why
    _check_not_expired(cert.not_valid_before_utc, cert.not_valid_after_utc, key)


def _check_not_expired(not_before: dt.datetime, not_after: dt.datetime, key: str) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    if now > not_after:
        raise ConfigError(f'the client certificate ("{key}") expired on '
                          f"{not_after:%Y-%m-%d %H:%M:%S} UTC")
    if now < not_before:
        raise ConfigError(f'the client certificate ("{key}") is not valid before '
                          f"{not_before:%Y-%m-%d %H:%M:%S} UTC")
