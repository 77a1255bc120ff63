"""SASL GSSAPI (Kerberos) against Apache Kafka, side by side with kcat.

An MIT KDC started by the test (realm, principals and keytabs in a temporary directory,
configuration through KRB5_CONFIG: nothing under /etc), an Apache Kafka node whose
SASL_PLAINTEXT listener takes GSSAPI as ``kafka/localhost``, and the client ``alice`` logging
in from her keytab. kcat (librdkafka with Cyrus SASL, running ``kinit``) is the reference.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from harness.apache_kafka import require_apache_kafka
from harness.kcat import kcat_path
from harness.kdc import GssapiKafka, kdc_missing, start_gssapi_kafka
from harness.topics import unique_topic

from kafka_fast import Consumer, Producer
from kafka_fast.errors import KafkaError

pytestmark = [pytest.mark.apache, pytest.mark.timeout(180)]


def _require(what: str | None) -> None:
    if what is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(what)
    pytest.skip(what)


@pytest.fixture(scope="module")
def gss_kafka(tmp_path_factory):
    require_apache_kafka()
    _require(kdc_missing())
    try:
        import gssapi  # noqa: F401
    except ImportError:
        _require("the gssapi package is not installed (pip install gssapi)")
    cluster = start_gssapi_kafka(tmp_path_factory.mktemp("gssapi-kafka"))
    patch = pytest.MonkeyPatch()
    # The Kerberos library reads its configuration from KRB5_CONFIG (restored afterwards).
    patch.setenv("KRB5_CONFIG", str(cluster.kdc.krb5_conf))
    try:
        yield cluster
    finally:
        patch.undo()
        cluster.stop()


def _produce(kafka: GssapiKafka, topic: str, items, extra=None) -> list[tuple]:
    errors: list = []
    producer = Producer(kafka.client_config({"error_cb": errors.append, "linger.ms": 5,
                                             **(extra or {})}))
    acked: list[tuple] = []

    def report(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.key(), msg.value()))

    for partition, key, value in items:
        producer.produce(topic, value, key, partition=partition, on_delivery=report)
    assert producer.flush(30) == 0
    assert errors == []
    return sorted(acked)


def _consume(kafka: GssapiKafka, topic: str, count: int) -> list[tuple]:
    consumer = Consumer(kafka.client_config({
        "group.id": unique_topic("gss-g"), "auto.offset.reset": "earliest",
        "enable.auto.commit": False}))
    got: list[tuple] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return sorted(got)


def _create(kafka: GssapiKafka, topic: str, partitions: int) -> None:
    from kafka_fast.admin import AdminClient, NewTopic

    admin = AdminClient(kafka.client_config())
    try:
        (fut,) = admin.create_topics([NewTopic(topic, partitions, 1)]).values()
        fut.result(30)
    finally:
        admin.close()


def test_round_trip_over_gssapi(gss_kafka):
    topic = unique_topic("gss")
    _create(gss_kafka, topic, 2)
    items = [(i % 2, b"k%d" % i, b"gss-%d" % i) for i in range(6)]
    acked = _produce(gss_kafka, topic, items)
    assert acked == sorted((i % 2, i // 2, b"k%d" % i, b"gss-%d" % i) for i in range(6))
    assert _consume(gss_kafka, topic, 6) == acked


def _kcat(kafka: GssapiKafka, tmp_path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {**os.environ, "KRB5_CONFIG": str(kafka.kdc.krb5_conf),
           "KRB5CCNAME": f"FILE:{tmp_path / 'kcat-ccache'}"}
    argv = [kcat_path() or "kcat", "-b", kafka.gss_bootstrap,
            "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=GSSAPI",
            "-X", "sasl.kerberos.service.name=kafka",
            "-X", f"sasl.kerberos.principal={kafka.client_principal}",
            "-X", f"sasl.kerberos.keytab={kafka.client_keytab}", *args]
    done = subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


def test_side_by_side_with_kcat(gss_kafka, tmp_path):
    if kcat_path() is None:
        _require("kcat not installed (Debian: kcat; tools/install_system_deps.sh)")
    topic = unique_topic("gss-kcat")
    _create(gss_kafka, topic, 1)
    # kcat writes, ours reads back exactly.
    _kcat(gss_kafka, tmp_path, "-P", "-t", topic, "-p", "0", "-K", ":",
          stdin=b"ka:from-kcat-0\nkb:from-kcat-1\n")
    assert _consume(gss_kafka, topic, 2) == [(0, 0, b"ka", b"from-kcat-0"),
                                             (0, 1, b"kb", b"from-kcat-1")]
    # Ours writes, kcat reads back exactly.
    acked = _produce(gss_kafka, topic, [(0, b"kc", b"from-ours-2"), (0, b"kd", b"from-ours-3")])
    assert acked == [(0, 2, b"kc", b"from-ours-2"), (0, 3, b"kd", b"from-ours-3")]
    out = _kcat(gss_kafka, tmp_path, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                "-f", "%o %k %s\\n")
    assert out.decode().splitlines() == ["0 ka from-kcat-0", "1 kb from-kcat-1",
                                         "2 kc from-ours-2", "3 kd from-ours-3"]


def test_wrong_principal_fails_the_login_with_a_reason(gss_kafka):
    """A principal the keytab does not hold: _AUTHENTICATION through error_cb, at once."""
    errors: list = []
    producer = Producer(gss_kafka.client_config({
        "sasl.kerberos.principal": "mallory@KAFKA.TEST", "error_cb": errors.append}))
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "no error reported"
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "GSSAPI" in errors[0].str()


def test_missing_gssapi_package_is_named(gss_kafka):
    """Without the gssapi package the login fails with an error naming it."""
    code = (
        "import sys, time\n"
        "sys.modules['gssapi'] = None  # import gssapi now raises ImportError\n"
        "from kafka_fast import Producer\n"
        "errors = []\n"
        f"p = Producer({gss_kafka.client_config()!r} | {{'error_cb': errors.append}})\n"
        "deadline = time.monotonic() + 20\n"
        "while not errors and time.monotonic() < deadline:\n"
        "    p.poll(0.2)\n"
        "print(errors[0].name(), errors[0].str())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("_AUTHENTICATION ")
    assert "'gssapi' package" in done.stdout


def test_default_credential_cache_without_keytab(gss_kafka, tmp_path, monkeypatch):
    """Without sasl.kerberos.keytab the login uses the credential cache kinit filled."""
    cache = f"FILE:{tmp_path / 'ccache'}"
    monkeypatch.setenv("KRB5CCNAME", cache)
    subprocess.run(["kinit", "-k", "-t", str(gss_kafka.client_keytab),
                    gss_kafka.client_principal], check=True, timeout=30,
                   env={**os.environ}, capture_output=True)
    topic = unique_topic("gss-cc")
    _create(gss_kafka, topic, 1)
    acked = _produce(gss_kafka, topic, [(0, b"k", b"from-ccache")],
                     {"sasl.kerberos.keytab": "", "sasl.kerberos.principal": ""})
    assert acked == [(0, 0, b"k", b"from-ccache")]
    assert _consume(gss_kafka, topic, 1) == acked
