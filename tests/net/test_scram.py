"""SCRAM client against the published exchanges of RFC 5802 and RFC 7677 (fixed nonces,
exact messages), and SCRAM-SHA-512 against kafka-python's independent implementation."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from kafka_fast.net.sasl import PlainMechanism, SaslError, ScramMechanism
from kafka_fast.net.scram import ScramClient, ScramError

# RFC 5802 section 5 (SCRAM-SHA-1), user "user", password "pencil".
RFC5802 = {
    "nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
                    b"p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}

# RFC 7677 section 3 (SCRAM-SHA-256), user "user", password "pencil".
RFC7677 = {
    "nonce": "rOprNGfwEbeRWgbNEkqO",
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}


@pytest.mark.parametrize("mechanism,vector", [("SCRAM-SHA-1", RFC5802),
                                              ("SCRAM-SHA-256", RFC7677)])
def test_rfc_exchange_exact_messages(mechanism, vector):
    client = ScramClient(mechanism, "user", "pencil", nonce=vector["nonce"])
    assert client.first_message() == vector["client_first"]
    assert client.final_message(vector["server_first"]) == vector["client_final"]
    client.verify_server_final(vector["server_final"])
    assert client.done


def test_rfc7677_through_the_sasl_mechanism():
    mech = ScramMechanism("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677["nonce"])
    assert mech.start() == RFC7677["client_first"]
    assert mech.step(RFC7677["server_first"]) == RFC7677["client_final"]
    assert mech.step(RFC7677["server_final"]) is None
    with pytest.raises(SaslError, match="unexpected extra server message"):
        mech.step(b"v=xyz")


def test_wrong_server_signature_is_rejected():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677["nonce"])
    client.first_message()
    client.final_message(RFC7677["server_first"])
    forged = b"v=" + base64.b64encode(b"\0" * 32)
    with pytest.raises(ScramError, match="server signature does not match"):
        client.verify_server_final(forged)
    assert not client.done


def test_wrong_password_gives_a_different_proof():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil2", nonce=RFC7677["nonce"])
    client.first_message()
    assert client.final_message(RFC7677["server_first"]) != RFC7677["client_final"]
    with pytest.raises(ScramError):
        client.verify_server_final(RFC7677["server_final"])


@pytest.mark.parametrize("server_first,reason", [
    (b"r=somebodyelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
    (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
    (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=100", "below 4096"),
    (b"r=rOprNGfwEbeRWgbNEkqOxyz,s=***,i=4096", "bad salt"),
    (b"r=rOprNGfwEbeRWgbNEkqOxyz,i=4096", "lacks 's'"),
    (b"e=unknown-user", "unknown-user"),
    (b"garbage", "malformed"),
])
def test_bad_server_first_messages(server_first, reason):
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677["nonce"])
    client.first_message()
    with pytest.raises(ScramError, match=reason):
        client.final_message(server_first)


def test_username_escaping():
    client = ScramClient("SCRAM-SHA-256", "a=b,c", "p", nonce="N")
    assert client.first_message() == b"n,,n=a=3Db=2Cc,r=N"


def test_sha512_matches_kafka_python():
    """kafka-python's SCRAM client (written independently) computes the same proof."""
    from kafka.net.sasl.scram import ScramClient as Reference

    nonce = "3x5d1Z0jmpcwVrJd1pYIoGxR"
    salt = base64.b64encode(hashlib.sha256(b"salt").digest()[:16]).decode()
    server_first = f"r={nonce}srv9Ux3a,s={salt},i=4096".encode()

    ref = Reference("alice", "s3cret", "SCRAM-SHA-512")
    ref.nonce = nonce.encode()
    ours = ScramClient("SCRAM-SHA-512", "alice", "s3cret", nonce=nonce)
    assert ours.first_message() == ref.first_message()
    final = ours.final_message(server_first)
    ref.process_server_first_message(server_first)
    assert final == ref.final_message()
    ours.verify_server_final(b"v=" + base64.b64encode(ref.server_signature))
    assert ours.done
    # The proof has SHA-512's length.
    assert len(base64.b64decode(final.split(b",p=")[1])) == hashlib.sha512().digest_size


def test_sha512_server_signature_by_definition():
    """ServerSignature = HMAC(HMAC(SaltedPassword, "Server Key"), AuthMessage) (RFC 5802)."""
    nonce = "fixednonce"
    server_first = b"r=fixednonceSERVER,s=" + base64.b64encode(b"0123456789abcdef") + b",i=4096"
    client = ScramClient("SCRAM-SHA-512", "bob", "pw", nonce=nonce)
    bare = client.first_message()[3:]
    final = client.final_message(server_first)
    salted = hashlib.pbkdf2_hmac("sha512", b"pw", b"0123456789abcdef", 4096)
    auth = bare + b"," + server_first + b"," + final.split(b",p=")[0]
    server_key = hmac.new(salted, b"Server Key", "sha512").digest()
    signature = hmac.new(server_key, auth, "sha512").digest()
    client.verify_server_final(b"v=" + base64.b64encode(signature))


def test_plain_message():
    mech = PlainMechanism("user", "pässword")
    assert mech.start() == b"\0user\0p\xc3\xa4ssword"
    assert mech.step(b"") is None
