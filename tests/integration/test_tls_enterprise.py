"""TLS as enterprises deploy it, against Apache Kafka, side by side with confluent-kafka.

One Apache Kafka node serves four SSL listeners, each with a server certificate from the
same CA and ``ssl.client.auth=required`` (mutual TLS): MTLS (a good certificate), BADNAME
(SAN ``kafka.invalid`` only), EXPIRED (expired) and REVOKED (listed in the CA's CRL).
Clients identify themselves with PEM files, in-memory PEMs (key encrypted or not) or
PKCS#12; records produced with one client are read back exactly with the other. A fifth
listener, ONECIPHER, speaks TLS 1.2 with one cipher suite only, and the broker's JVM offers
one TLS group (P-256), so that ``ssl.cipher.suites``, ``ssl.curves.list`` and
``ssl.sigalgs.list`` are seen to work both ways.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import confluent_kafka
import pytest
from harness.apache_kafka import (
    COMMON_SETTINGS,
    ApacheKafka,
    ApacheKafkaView,
    require_apache_kafka,
    start_single_node,
)
from harness.certs import MtlsFiles, make_mtls_files
from harness.peers import missing, require_tool
from harness.ports import LOOPBACK, free_port
from harness.reference_client import consume, produce
from harness.topics import create_topic, unique_topic

from integration.test_apache_kafka import produce_ours, read_ours
from kafka_fast import Consumer, Producer, TopicPartition
from kafka_fast.errors import ConfigError, KafkaError, KafkaException
from kafka_fast.net import openssl
from kafka_fast.topic_partition import OFFSET_BEGINNING

pytestmark = [pytest.mark.apache, pytest.mark.timeout(120)]

E = KafkaError
TLS_LISTENERS = {"MTLS": "server", "BADNAME": "bad_name_server", "EXPIRED": "expired_server",
                 "REVOKED": "revoked_server", "ONECIPHER": "server"}
#: The only suite ONECIPHER accepts (Java's name) and OpenSSL's names for it and another one.
BROKER_SUITE = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
SAME_SUITE, OTHER_SUITE = "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-AES128-GCM-SHA256"


class TlsCluster:
    def __init__(self, cluster: ApacheKafka, ports: dict[str, int], files: MtlsFiles) -> None:
        self.cluster = cluster
        self.ports = ports
        self.files = files

    def view(self, listener: str) -> ApacheKafkaView:
        return ApacheKafkaView(self.cluster, f"{LOOPBACK}:{self.ports[listener]}",
                               security_protocol="SSL")


@pytest.fixture(scope="module")
def tls_kafka(tmp_path_factory) -> TlsCluster:
    require_apache_kafka()
    workdir = tmp_path_factory.mktemp("tls-kafka")
    files = make_mtls_files(workdir / "certs")
    names = ["PLAINTEXT", "CONTROLLER", *TLS_LISTENERS]
    ports = {n: free_port() for n in names}
    settings = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": f"1@{LOOPBACK}:{ports['CONTROLLER']}",
        "listeners": ",".join(f"{n}://{LOOPBACK}:{ports[n]}" for n in names),
        "advertised.listeners": ",".join(f"{n}://{LOOPBACK}:{ports[n]}" for n in names
                                         if n != "CONTROLLER"),
        "listener.security.protocol.map": ",".join(
            f"{n}:{'PLAINTEXT' if n in ('PLAINTEXT', 'CONTROLLER') else 'SSL'}" for n in names),
        "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(workdir / "data"),
        **COMMON_SETTINGS,
        "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
    }
    for listener, attr in TLS_LISTENERS.items():
        prefix = f"listener.name.{listener.lower()}."
        settings.update({
            prefix + "ssl.keystore.type": "PEM",
            prefix + "ssl.keystore.location": str(getattr(files, attr)),
            prefix + "ssl.truststore.type": "PEM",
            prefix + "ssl.truststore.location": str(files.ca),
            prefix + "ssl.client.auth": "required",
        })
    settings.update({"listener.name.onecipher.ssl.cipher.suites": BROKER_SUITE,
                     "listener.name.onecipher.ssl.enabled.protocols": "TLSv1.2"})
    cluster = start_single_node(workdir, ports, settings,
                                jvm_options=("-Djdk.tls.namedGroups=secp256r1",))
    yield TlsCluster(cluster, ports, files)
    cluster.discard()


def _pem_files(f: MtlsFiles) -> dict[str, str]:
    return {"ssl.ca.location": str(f.ca), "ssl.certificate.location": str(f.client_cert),
            "ssl.key.location": str(f.client_key)}


def _in_memory(f: MtlsFiles, encrypted: bool) -> dict[str, str]:
    key = f.client_key_encrypted if encrypted else f.client_key
    conf = {"ssl.ca.pem": f.ca.read_text(), "ssl.certificate.pem": f.client_cert.read_text(),
            "ssl.key.pem": key.read_text()}
    if encrypted:
        conf["ssl.key.password"] = f.key_password
    return conf


def _pkcs12(f: MtlsFiles) -> dict[str, str]:
    return {"ssl.ca.location": str(f.ca), "ssl.keystore.location": str(f.client_p12),
            "ssl.keystore.password": f.keystore_password}


def _items(n: int, tag: str) -> list[tuple[int, bytes, bytes]]:
    return [(i % 2, b"k%d" % i, f"{tag}-{i}".encode()) for i in range(n)]


def _round_trips(tls: TlsCluster, listener: str, ours: dict, theirs: dict,
                 tag: str) -> None:
    """kafka_fast produces, confluent-kafka reads; then the other way round."""
    view = tls.view(listener)
    for direction in ("ours-to-theirs", "theirs-to-ours"):
        topic = unique_topic(f"tls-{tag}")
        create_topic(tls.cluster, topic, 2)
        items = _items(20, f"{tag}-{direction}")
        if direction == "ours-to-theirs":
            acked = produce_ours(view, topic, items, **ours)
            got = consume(view, topic, 2, len(items), extra=theirs)
        else:
            acked = sorted(produce(view, topic, items, extra=theirs))
            got = read_ours(view, topic, 2, len(items), **ours)
        assert [(r.partition, r.offset) for r in acked] == sorted(
            (p, o) for p in range(2) for o in range(10))
        assert got == acked, direction


def _our_error(view, conf: dict, timeout: float = 8.0) -> KafkaError:
    """The error kafka_fast reports connecting with ``conf`` (the test fails if it got in)."""
    errors: list = []
    with Producer(view.client_config({"error_cb": errors.append, **conf})) as p:
        with pytest.raises(KafkaException) as info:
            p.list_topics(timeout=timeout)
        p.poll(0.5)
    return errors[0] if errors else info.value.args[0]


def _their_error(view, conf: dict, timeout: float = 8.0) -> str:
    errors: list = []
    p = confluent_kafka.Producer(view.client_config({"error_cb": errors.append, **conf}))
    with pytest.raises(confluent_kafka.KafkaException):
        p.list_topics(timeout=timeout)
    p.poll(0.5)
    return " ".join(str(e) for e in errors)


# -- mutual TLS: each way to give the client its identity -------------------------------------

def test_mutual_tls_with_pem_files(tls_kafka):
    conf = _pem_files(tls_kafka.files)
    _round_trips(tls_kafka, "MTLS", conf, conf, "pem-files")


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain-key", "encrypted-key"])
def test_mutual_tls_with_in_memory_pems(tls_kafka, encrypted):
    conf = _in_memory(tls_kafka.files, encrypted)
    _round_trips(tls_kafka, "MTLS", conf, conf, f"pem-mem-{encrypted}")


def test_mutual_tls_with_a_pkcs12_keystore(tls_kafka):
    conf = _pkcs12(tls_kafka.files)
    _round_trips(tls_kafka, "MTLS", conf, conf, "pkcs12")


def test_broker_requiring_a_client_certificate_refuses_a_client_without_one(tls_kafka):
    err = _our_error(tls_kafka.view("MTLS"), {"ssl.ca.location": str(tls_kafka.files.ca)})
    assert err.code() in (E._SSL, E._TRANSPORT), err


def test_wrong_key_password_or_key_is_a_clear_config_error(tls_kafka):
    conf = {**_in_memory(tls_kafka.files, True), "ssl.key.password": "not-the-password"}
    with pytest.raises(KafkaException) as info:
        Producer(tls_kafka.view("MTLS").client_config(conf))
    assert isinstance(info.value, ConfigError)
    assert "ssl.certificate.pem" in str(info.value) and "ssl.key.password" in str(info.value)
    mismatch = {**_pem_files(tls_kafka.files),
                "ssl.key.location": str(tls_kafka.files.expired_client_key)}
    with pytest.raises(ConfigError, match="private key does not match the certificate"):
        Producer(tls_kafka.view("MTLS").client_config(mismatch))
    conf = {**_pkcs12(tls_kafka.files), "ssl.keystore.password": "not-the-password"}
    with pytest.raises(ConfigError, match="ssl.keystore.password"):
        Producer(tls_kafka.view("MTLS").client_config(conf))


# -- what must be refused ---------------------------------------------------------------------

def test_host_name_check_refuses_a_certificate_for_another_name(tls_kafka):
    view = tls_kafka.view("BADNAME")
    conf = _pem_files(tls_kafka.files)
    err = _our_error(view, {**conf, "ssl.endpoint.identification.algorithm": "https"})
    assert err.code() == E._SSL and "not valid for '127.0.0.1'" in err.str(), err
    theirs = _their_error(view, {**conf, "ssl.endpoint.identification.algorithm": "https"})
    assert "certificate verify failed" in theirs.lower() or "ssl" in theirs.lower(), theirs
    # With the check off the same listener is used (the chain is still verified).
    off = {**conf, "ssl.endpoint.identification.algorithm": "none"}
    _round_trips(tls_kafka, "BADNAME", off, off, "no-hostname-check")


def test_expired_server_certificate_is_refused(tls_kafka):
    view = tls_kafka.view("EXPIRED")
    conf = _pem_files(tls_kafka.files)
    err = _our_error(view, conf)
    assert err.code() == E._SSL and "expired" in err.str(), err
    # librdkafka refuses it too, without saying why.
    assert "certificate verify failed" in _their_error(view, conf)


def test_expired_client_certificate_is_refused_with_a_clear_error(tls_kafka):
    f = tls_kafka.files
    conf = {"ssl.ca.location": str(f.ca), "ssl.certificate.location": str(f.expired_client_cert),
            "ssl.key.location": str(f.expired_client_key)}
    with pytest.raises(ConfigError, match=r"client certificate \(\"ssl.certificate.location\"\) "
                                          r"expired on"):
        Producer(tls_kafka.view("MTLS").client_config(conf))
    # librdkafka loads it and the broker refuses the handshake.
    assert _their_error(tls_kafka.view("MTLS"), conf)


def test_crl_refuses_a_revoked_server_certificate(tls_kafka):
    conf = {**_pem_files(tls_kafka.files), "ssl.crl.location": str(tls_kafka.files.crl)}
    err = _our_error(tls_kafka.view("REVOKED"), conf)
    assert err.code() == E._SSL and "revoked" in err.str(), err
    assert "certificate verify failed" in _their_error(tls_kafka.view("REVOKED"), conf)
    # The same CRL lets a certificate it does not list through; without it, REVOKED is used.
    _round_trips(tls_kafka, "MTLS", conf, conf, "crl")
    plain = _pem_files(tls_kafka.files)
    _round_trips(tls_kafka, "REVOKED", plain, plain, "no-crl")


# -- cipher suites, groups, signature algorithms, providers ------------------------------------

#: Seconds to wait for a handshake refusal (each client reports it on its first attempt).
QUICK = 3.0


def _one_way(tls: TlsCluster, listener: str, conf: dict, tag: str) -> None:
    """kafka_fast produces with ``conf``, confluent-kafka reads with the same settings."""
    view = tls.view(listener)
    topic = unique_topic(f"tls-{tag}")
    create_topic(tls.cluster, topic, 2)
    items = _items(10, tag)
    acked = produce_ours(view, topic, items, **conf)
    assert sorted((r.partition, r.offset) for r in acked) == sorted(
        (p, o) for p in range(2) for o in range(5))
    assert consume(view, topic, 2, len(items), extra=conf) == acked


def test_cipher_suites_offered_are_the_configured_ones(tls_kafka):
    view = tls_kafka.view("ONECIPHER")
    conf = _pem_files(tls_kafka.files)
    other = {**conf, "ssl.cipher.suites": OTHER_SUITE}
    err = _our_error(view, other, QUICK)
    assert err.code() == E._SSL and "handshake failure" in err.str().lower(), err
    assert "handshake failure" in _their_error(view, other, QUICK).lower()
    _one_way(tls_kafka, "ONECIPHER", {**conf, "ssl.cipher.suites": f"{OTHER_SUITE}:{SAME_SUITE}"},
             "ciphers")
    with pytest.raises(ConfigError, match=r'"ssl.cipher.suites" \'NO-SUCH\' is refused by '
                                          "OpenSSL: .*No cipher can be selected"):
        Producer(view.client_config({**conf, "ssl.cipher.suites": "NO-SUCH"}))


def test_curves_list_limits_the_groups_offered(tls_kafka):
    """The broker's JVM accepts P-256 only: a client offering X25519 alone is refused."""
    view = tls_kafka.view("MTLS")
    conf = _pem_files(tls_kafka.files)
    x25519 = {**conf, "ssl.curves.list": "X25519"}
    err = _our_error(view, x25519, QUICK)  # Java answers with an "unexpected message" alert
    assert err.code() == E._SSL and "alert unexpected message" in err.str().lower(), err
    assert "ssl handshake failed" in _their_error(view, x25519, QUICK).lower()
    _one_way(tls_kafka, "MTLS", {**conf, "ssl.curves.list": "X25519:P-256"}, "curves")
    with pytest.raises(ConfigError, match=r'"ssl.curves.list" \'P-999\' is refused by OpenSSL'):
        Producer(view.client_config({**conf, "ssl.curves.list": "P-999"}))


def test_sigalgs_list_limits_the_signature_algorithms_offered(tls_kafka):
    """The broker's certificate has an ECDSA P-256 key: RSA signatures alone cannot do."""
    view = tls_kafka.view("MTLS")
    conf = _pem_files(tls_kafka.files)
    rsa = {**conf, "ssl.sigalgs.list": "RSA-PSS+SHA256:RSA+SHA256"}
    err = _our_error(view, rsa, QUICK)
    assert err.code() == E._SSL, err
    assert _their_error(view, rsa, QUICK)
    _one_way(tls_kafka, "MTLS", {**conf, "ssl.sigalgs.list": "RSA+SHA256:ECDSA+SHA256"},
             "sigalgs")
    with pytest.raises(ConfigError, match=r'"ssl.sigalgs.list" \'RSA\+NOHASH\' is refused'):
        Producer(view.client_config({**conf, "ssl.sigalgs.list": "RSA+NOHASH"}))


def test_providers_are_loaded_when_named(tls_kafka, tmp_path):
    """A client key encrypted with single DES can only be read with OpenSSL 3's legacy
    provider: refused without ssl.providers, used with ssl.providers=default,legacy."""
    openssl_cli = shutil.which("openssl")
    if openssl_cli is None:
        pytest.skip("the openssl command is needed to write a DES-encrypted key "
                    "(apt-get install openssl)")
    f = tls_kafka.files
    des_key = tmp_path / "client-des.key"
    subprocess.run([openssl_cli, "ec", "-in", str(f.client_key), "-des", "-passout",
                    f"pass:{f.key_password}", "-out", str(des_key), "-provider", "legacy",
                    "-provider", "default"], check=True, capture_output=True, timeout=30)
    assert "DEK-Info: DES-CBC," in des_key.read_text()
    conf = {**_pem_files(f), "ssl.key.location": str(des_key), "ssl.key.password": f.key_password}
    view = tls_kafka.view("MTLS")
    if not openssl.provider_available("legacy"):
        with pytest.raises(ConfigError, match="the private key cannot be read"):
            Producer(view.client_config(conf))
    with_legacy = {**conf, "ssl.providers": "default,legacy"}
    topic = unique_topic("tls-providers")
    create_topic(tls_kafka.cluster, topic, 2)
    items = _items(10, "providers")
    acked = produce_ours(view, topic, items, **with_legacy)
    assert read_ours(view, topic, 2, len(items), **with_legacy) == acked and len(acked) == 10
    assert openssl.provider_available("legacy")
    # confluent-kafka's wheel carries its own OpenSSL, whose legacy module is not installed.
    with pytest.raises(confluent_kafka.KafkaException, match="Failed to load OpenSSL provider"):
        confluent_kafka.Producer(view.client_config(with_legacy))
    with pytest.raises(ConfigError, match=r'"ssl.providers": OpenSSL provider \'no-such\' '
                                          "cannot be loaded"):
        Producer(view.client_config({**conf, "ssl.providers": "default,no-such"}))


# -- secrets stay secret ----------------------------------------------------------------------


# -- an OpenSSL engine supplying the client certificate ---------------------------------------

ENGINE_SOURCE = Path(__file__).parent / "engine" / "client_cert_engine.c"


@pytest.fixture(scope="module")
def cert_engine(tmp_path_factory) -> Path:
    """tests/integration/engine/client_cert_engine.c compiled against OpenSSL's headers: a
    dynamic engine whose only job is ENGINE_load_ssl_client_cert, answering with the
    certificate and key files named by KAFKA_FAST_TEST_ENGINE_CERT/_KEY."""
    gcc = require_tool("gcc")
    if not Path("/usr/include/openssl/engine.h").exists():
        missing("openssl/engine.h")
    out = tmp_path_factory.mktemp("engine") / "client_cert_engine.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-Wall", "-Werror", "-o", str(out),
                    str(ENGINE_SOURCE), "-lcrypto"], check=True, capture_output=True, timeout=60)
    return out


def test_an_engine_supplies_the_client_certificate(tls_kafka, cert_engine, monkeypatch):
    """ssl.engine.location: the only client identity is the one the engine hands over, and a
    listener requiring a client certificate takes it (exact records both ways); the same
    configuration without the engine is refused by the broker
    (test_broker_requiring_a_client_certificate_refuses_a_client_without_one)."""
    f = tls_kafka.files
    monkeypatch.setenv("KAFKA_FAST_TEST_ENGINE_CERT", str(f.client_cert))
    monkeypatch.setenv("KAFKA_FAST_TEST_ENGINE_KEY", str(f.client_key))
    view = tls_kafka.view("MTLS")
    for engine_id in ("dynamic", "kafka_fast_test_cert"):
        conf = {"ssl.ca.location": str(f.ca), "ssl.engine.location": str(cert_engine),
                "ssl.engine.id": engine_id}
        topic = unique_topic("tls-engine")
        create_topic(tls_kafka.cluster, topic, 2)
        items = _items(20, f"engine-{engine_id}")
        acked = produce_ours(view, topic, items, **conf)
        assert [(r.partition, r.offset) for r in acked] == sorted(
            (p, o) for p in range(2) for o in range(10))
        assert [(r.key, r.value) for r in sorted(acked, key=lambda r: r.value)] == sorted(
            (k, v) for _, k, v in items)
        assert read_ours(view, topic, 2, len(items), **conf) == acked


def test_an_engine_that_cannot_supply_a_certificate_is_a_clear_error(tls_kafka, cert_engine,
                                                                     monkeypatch, tmp_path):
    f = tls_kafka.files
    view = tls_kafka.view("MTLS")
    monkeypatch.delenv("KAFKA_FAST_TEST_ENGINE_CERT", raising=False)
    monkeypatch.delenv("KAFKA_FAST_TEST_ENGINE_KEY", raising=False)
    conf = {"ssl.ca.location": str(f.ca), "ssl.engine.location": str(cert_engine)}
    with pytest.raises(ConfigError, match=r'"ssl.engine.location": OpenSSL engine '
                                          r"'kafka_fast_test_cert' supplied no client "
                                          "certificate"):
        Producer(view.client_config(conf))
    monkeypatch.setenv("KAFKA_FAST_TEST_ENGINE_CERT", str(f.client_cert))
    monkeypatch.setenv("KAFKA_FAST_TEST_ENGINE_KEY", str(f.expired_client_key))
    with pytest.raises(ConfigError, match=r"are refused \(SSL_CTX_use_PrivateKey\): "
                                          ".*key values mismatch"):
        Producer(view.client_config(conf))
    not_an_engine = tmp_path / "not-an-engine.so"
    not_an_engine.write_bytes(b"not a shared library")
    with pytest.raises(ConfigError, match=r'"ssl.engine.location" .*not-an-engine.so.*cannot be '
                                          r"loaded \(LOAD\): .*could not load the shared "
                                          "library"):
        Producer(view.client_config({**conf, "ssl.engine.location": str(not_an_engine)}))


def test_confluent_kafka_dies_building_a_client_with_the_engine(tls_kafka, cert_engine):
    """Known outcome side by side: confluent-kafka 2.16 dies with SIGSEGV in rd_kafka_new()
    given the same engine (in OPENSSL_sk_free called from rd_kafka_ssl_set_certs: librdkafka
    frees the stack of CA names it hands the engine before the call and again after it)."""
    f = tls_kafka.files
    conf = tls_kafka.view("MTLS").client_config(
        {"ssl.ca.location": str(f.ca), "ssl.engine.location": str(cert_engine)})
    script = ("import json, sys, confluent_kafka\n"
              "confluent_kafka.Producer(json.loads(sys.argv[1]))\n"
              "print('built', flush=True)\n")
    env = {**os.environ, "KAFKA_FAST_TEST_ENGINE_CERT": str(f.client_cert),
           "KAFKA_FAST_TEST_ENGINE_KEY": str(f.client_key)}
    done = subprocess.run([sys.executable, "-c", script, json.dumps(conf)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stdout, done.stderr)
    assert "built" not in done.stdout


def _secrets(f: MtlsFiles) -> list[str]:
    """The passwords and every base64 line of the private keys (plain and encrypted)."""
    out = [f.key_password, f.keystore_password]
    for path in (f.client_key, f.client_key_encrypted):
        out += [line for line in path.read_text().splitlines()
                if line and not line.startswith("-----")]
    return out


def test_secrets_never_reach_logs_reprs_errors_statistics_or_the_cli(tls_kafka, tmp_path):
    import io
    import json
    import logging
    import subprocess
    import sys

    f = tls_kafka.files
    view = tls_kafka.view("MTLS")
    seen: list[str] = []

    def note(err) -> None:
        seen.append(str(err))

    stream = io.StringIO()
    logger = logging.getLogger(f"tls-secrets-{unique_topic('log')}")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(logging.StreamHandler(stream))
    topic = unique_topic("tls-secrets")
    create_topic(tls_kafka.cluster, topic, 2)
    stats: list[str] = []
    for conf in (_in_memory(f, True), _pkcs12(f)):
        full = view.client_config({**conf, "logger": logger,
                                   "statistics.interval.ms": 100, "stats_cb": stats.append,
                                   "error_cb": note})
        with Producer(full) as p:
            seen.append(repr(p))
            p.produce(topic, b"v", partition=0)
            assert p.flush(30) == 0
            deadline = time.monotonic() + 5
            while not stats and time.monotonic() < deadline:
                p.poll(0.1)
        c = Consumer({**full, "group.id": f"g-{topic}"})
        try:
            seen.append(repr(c))
            c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
            msgs = c.consume(1, 15)
            assert [m.value() for m in msgs] == [b"v"] * len(msgs)
            seen.append(repr(c.consumer_group_metadata()))
        finally:
            c.close()
    assert stats and all(json.loads(s) for s in stats)
    seen.extend(stats)
    # Failed logins: a wrong key password, a wrong keystore password, an unknown CA.
    for bad in ({**_in_memory(f, True), "ssl.key.password": "wrong-" + f.key_password[:4]},
                {**_pkcs12(f), "ssl.keystore.password": "wrong"},
                {**_in_memory(f, True), "ssl.ca.pem": f.client_cert.read_text()}):
        try:
            with Producer(view.client_config({**bad, "logger": logger,
                                              "error_cb": note})) as p:
                p.list_topics(timeout=3)
        except KafkaException as exc:
            seen.extend([str(exc), repr(exc)])
    # Secrets given with the wrong type (bytes where text is expected).
    for key in ("ssl.key.pem", "ssl.key.password", "ssl.keystore.password"):
        secret = f.client_key.read_bytes() if key == "ssl.key.pem" else f.key_password.encode()
        with pytest.raises(ConfigError, match=f'"{key}": expected a string') as info:
            Producer(view.client_config({key: secret}))
        seen.extend([str(info.value), repr(info.value)])
    # The command line: the same keys through -X, a read, then a refused one.
    props = [item for k, v in _in_memory(f, True).items() for item in ("-X", f"{k}={v}")]
    for extra in ([], ["-X", "ssl.key.password=wrong"]):
        done = subprocess.run(
            [sys.executable, "-m", "kafka_fast", "consume", "-b", view.bootstrap,
             "-X", "security.protocol=SSL", *props, *extra, "-t", topic, "-p", "0",
             "-o", "beginning", "-c", "1", "-e"],
            capture_output=True, text=True, timeout=60, check=False)
        seen.extend([done.stdout, done.stderr])
    assert "v" in seen[-4].split()  # the first run printed the record
    seen.append(stream.getvalue())
    everything = "\n".join(seen)
    assert "TLS handshake" in everything or "_SSL" in everything  # errors were captured
    leaked = [s for s in _secrets(f) if s in everything]
    assert leaked == [], f"{len(leaked)} secrets in the output"
