"""The harness starts real brokers that independent clients (confluent-kafka, kcat) use."""

from __future__ import annotations

import os
import ssl
import time

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from harness import create_topic, external_from_env, unique_topic
from harness.probe import API_VERSIONS, api_versions
from harness.reference_client import Record, consume, produce

pytestmark = pytest.mark.timeout(60)

PARTITIONS = 3


def known_records(n: int = 100) -> list[tuple[int, bytes, bytes]]:
    """``n`` records spread over PARTITIONS partitions, each key/value unique."""
    return [(i % PARTITIONS, b"key-%03d" % i, b"value-%03d-" % i + bytes([i]) * i) for i in range(n)]


def expected_log(items: list[tuple[int, bytes, bytes]]) -> list[Record]:
    """Where each record must land: per partition, offsets 0.. in production order."""
    next_offset = [0] * PARTITIONS
    out = []
    for partition, key, value in items:
        out.append(Record(partition, next_offset[partition], key, value))
        next_offset[partition] += 1
    return sorted(out)


def wait_for_error(producer: Producer, errors: list, seconds: float, code: int | None = None) -> float:
    """Poll ``producer`` until its error_cb reported ``code`` (any error when None);
    return the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if any(code is None or e.code() == code for e in errors):
            break
        producer.poll(0.1)
    return time.monotonic() - start


def test_roundtrip_100_records(broker):
    topic = unique_topic("roundtrip")
    create_topic(broker, topic, PARTITIONS)
    items = known_records()
    want = expected_log(items)

    acked = produce(broker, topic, items)
    assert sorted(acked) == want

    got = consume(broker, topic, PARTITIONS, len(items))
    assert got == want


def test_kafka_fixture_kind(kafka):
    external = external_from_env()
    if external is None:
        assert kafka.kind == "tansu"
    else:
        assert (kafka.kind, kafka.bootstrap) == ("external", external.bootstrap)
    md = AdminClient(kafka.client_config()).list_topics(timeout=10)
    assert md.brokers, "metadata lists no broker"


def test_tansu_attributes_and_raw_api_versions(tansu):
    assert tansu.bootstrap == f"127.0.0.1:{tansu.port}"
    assert tansu.kind == "tansu" and tansu.security_protocol == "PLAINTEXT"
    os.kill(tansu.pid, 0)  # the process is ours and alive
    versions = api_versions("127.0.0.1", tansu.port)
    # Produce, Fetch, Metadata and ApiVersions are advertised with v0 available.
    for key in (0, 1, 3, API_VERSIONS):
        assert versions[key][0] == 0 and versions[key][1] >= 3, (key, versions.get(key))
    md = AdminClient(tansu.client_config()).list_topics(timeout=10)
    assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", tansu.port)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_tansu_authentication_rejects_login(tansu_sasl, mechanism):
    errors: list[KafkaError] = []
    producer = Producer(
        tansu_sasl.client_config(
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism,
                "sasl.username": "alice",
                "sasl.password": "not-a-user",
                "error_cb": errors.append,
                "log_level": 0,
            }
        )
    )
    took = wait_for_error(producer, errors, 5.0, KafkaError._AUTHENTICATION)
    codes = {e.code() for e in errors}
    assert KafkaError._AUTHENTICATION in codes, [e.str() for e in errors]
    assert took < 5.0


def test_tansu_tls_with_right_ca(tansu_tls):
    assert tansu_tls.security_protocol == "SSL"
    assert tansu_tls.ca_path and tansu_tls.wrong_ca_path
    # Raw TLS handshake verifying the CA and the 127.0.0.1 IP SAN, then ApiVersions.
    ctx = ssl.create_default_context(cafile=tansu_tls.ca_path)
    assert API_VERSIONS in api_versions("127.0.0.1", tansu_tls.port, ssl_context=ctx)

    topic = unique_topic("tls")
    create_topic(tansu_tls, topic, 1)
    items = [(0, b"k%d" % i, b"secret-%d" % i) for i in range(10)]
    assert produce(tansu_tls, topic, items) == expected_log(items)
    assert consume(tansu_tls, topic, 1, len(items)) == expected_log(items)


def test_tansu_tls_with_wrong_ca_fails(tansu_tls):
    ctx = ssl.create_default_context(cafile=tansu_tls.wrong_ca_path)
    with pytest.raises(ssl.SSLCertVerificationError):
        api_versions("127.0.0.1", tansu_tls.port, ssl_context=ctx)

    errors: list[KafkaError] = []
    producer = Producer(
        tansu_tls.client_config(
            {"ssl.ca.location": tansu_tls.wrong_ca_path, "error_cb": errors.append, "log_level": 0}
        )
    )
    wait_for_error(producer, errors, 10.0)
    assert errors, "no error reported for a server certificate from an unknown CA"
    text = " ".join(e.str() for e in errors)
    assert "certificate verify failed" in text, text
