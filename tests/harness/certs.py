"""Test certificates made with `cryptography`: a CA, a server cert it signs, and an unrelated CA."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: ``ca`` signs ``server_cert`` (SAN 127.0.0.1 and localhost);
    ``wrong_ca`` is an unrelated CA that must not verify the server."""

    ca: Path
    server_cert: Path
    server_key: Path
    wrong_ca: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _validity(builder: x509.CertificateBuilder) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.timezone.utc)
    return builder.not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(
        now + dt.timedelta(days=2)
    )


def _ca(common_name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    )
    return _validity(builder).sign(key, hashes.SHA256()), key


def _server(
    ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    san = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    return _leaf(ca_cert, ca_key, "127.0.0.1", san, ExtendedKeyUsageOID.SERVER_AUTH)


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> Path:
    return _secret_file(path, _key_pem(key))


def make_tls_files(directory: Path) -> TlsFiles:
    """Write a fresh CA, server certificate/key and an unrelated CA into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _ca("kafka-fast test CA")
    server_cert, server_key = _server(ca_cert, ca_key)
    wrong_ca_cert, _ = _ca("kafka-fast unrelated CA")
    return TlsFiles(
        ca=_write_cert(directory / "ca.pem", ca_cert),
        server_cert=_write_cert(directory / "server.pem", server_cert),
        server_key=_write_key(directory / "server.key", server_key),
        wrong_ca=_write_cert(directory / "wrong-ca.pem", wrong_ca_cert),
    )


# -- mutual TLS and the certificates a broker or client must refuse ----------------------------

@dataclass(frozen=True)
class MtlsFiles:
    """One CA (``ca``, with ``crl`` revoking ``revoked_server_cert``) for servers and clients.

    Server identities (key + chain in one PEM file, Kafka's PEM keystore): ``server`` (SAN
    127.0.0.1/localhost), ``bad_name_server`` (SAN only ``kafka.invalid``),
    ``expired_server`` and ``revoked_server``. Client identities: ``client_cert`` /
    ``client_key`` (PEM, key unencrypted), ``client_key_encrypted`` (with
    ``key_password``), ``client_p12`` (PKCS#12 with ``keystore_password``), and
    ``expired_client_cert`` / ``expired_client_key``.
    """

    ca: Path
    crl: Path
    server: Path
    bad_name_server: Path
    expired_server: Path
    revoked_server: Path
    client_cert: Path
    client_key: Path
    client_key_encrypted: Path
    key_password: str
    client_p12: Path
    keystore_password: str
    expired_client_cert: Path
    expired_client_key: Path


def _leaf(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey, name: str,
          sans: list[x509.GeneralName], usage, expired: bool = False):
    key = _key()
    now = dt.datetime.now(dt.timezone.utc)
    start, end = ((now - dt.timedelta(days=3), now - dt.timedelta(days=1)) if expired
                  else (now - dt.timedelta(hours=1), now + dt.timedelta(days=2)))
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _key_pem(key, password: str | None = None) -> bytes:
    encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             encryption)


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _secret_file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def make_mtls_files(directory: Path) -> MtlsFiles:
    """Write the files of ``MtlsFiles`` (fresh keys, passwords random) into ``directory``."""
    import secrets

    from cryptography.hazmat.primitives.serialization import pkcs12

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    ca_cert, ca_key = _ca("kafka-fast mTLS CA")
    here = [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
    server = ExtendedKeyUsageOID.SERVER_AUTH
    client = ExtendedKeyUsageOID.CLIENT_AUTH

    def server_file(name: str, cert, key) -> Path:
        return _secret_file(directory / name, _key_pem(key) + _cert_pem(cert) + _cert_pem(ca_cert))

    good = server_file("server.pem", *_leaf(ca_cert, ca_key, "127.0.0.1", here, server))
    bad_name = server_file("bad-name-server.pem", *_leaf(
        ca_cert, ca_key, "kafka.invalid", [x509.DNSName("kafka.invalid")], server))
    expired = server_file("expired-server.pem",
                          *_leaf(ca_cert, ca_key, "127.0.0.1", here, server, expired=True))
    revoked_cert, revoked_key = _leaf(ca_cert, ca_key, "127.0.0.1", here, server)
    revoked = server_file("revoked-server.pem", revoked_cert, revoked_key)
    now = dt.datetime.now(dt.timezone.utc)
    crl = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now - dt.timedelta(hours=1))
        .next_update(now + dt.timedelta(days=2))
        .add_revoked_certificate(
            x509.RevokedCertificateBuilder().serial_number(revoked_cert.serial_number)
            .revocation_date(now - dt.timedelta(minutes=30)).build())
        .sign(ca_key, hashes.SHA256())
    )
    client_cert, client_key = _leaf(ca_cert, ca_key, "kafka-fast-client", [], client)
    old_cert, old_key = _leaf(ca_cert, ca_key, "kafka-fast-client", [], client, expired=True)
    key_password = secrets.token_hex(12)
    keystore_password = secrets.token_hex(12)
    p12 = pkcs12.serialize_key_and_certificates(
        b"client", client_key, client_cert, None,
        serialization.BestAvailableEncryption(keystore_password.encode()))
    return MtlsFiles(
        ca=_write_cert(directory / "mtls-ca.pem", ca_cert),
        crl=_secret_file(directory / "crl.pem", crl.public_bytes(serialization.Encoding.PEM)),
        server=good, bad_name_server=bad_name, expired_server=expired, revoked_server=revoked,
        client_cert=_write_cert(directory / "client.pem", client_cert),
        client_key=_secret_file(directory / "client.key", _key_pem(client_key)),
        client_key_encrypted=_secret_file(directory / "client-encrypted.key",
                                          _key_pem(client_key, key_password)),
        key_password=key_password,
        client_p12=_secret_file(directory / "client.p12", p12),
        keystore_password=keystore_password,
        expired_client_cert=_write_cert(directory / "expired-client.pem", old_cert),
        expired_client_key=_secret_file(directory / "expired-client.key", _key_pem(old_key)),
    )
