"""The harness starts real brokers that independent clients (confluent-kafka, kcat) use."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from harness import create_topic, external_from_env, unique_topic
from harness.apache_kafka import (
    apache_kafka_missing,
    kafka_version,
    matrix_versions,
    tools_v4_version,
)
from harness.oauth2 import mock_version
from harness.peers import missing
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
        assert kafka.kind == ("kafka" if apache_kafka_missing() is None else "tansu")
    else:
        assert (kafka.kind, kafka.bootstrap) == ("external", external.bootstrap)
    md = AdminClient(kafka.client_config()).list_topics(timeout=10)
    assert md.brokers, "metadata lists no broker"


def test_apache_kafka_attributes_and_raw_api_versions(apache_kafka):
    assert apache_kafka.kind == "kafka" and apache_kafka.version == kafka_version()
    assert apache_kafka.bootstrap == f"127.0.0.1:{apache_kafka.port}"
    os.kill(apache_kafka.pid, 0)  # the JVM is ours and alive
    versions = api_versions("127.0.0.1", apache_kafka.port)
    # ConsumerGroupHeartbeat (KIP-848), AlterUserScramCredentials, DeleteRecords are served.
    assert {68, 51, 21} <= set(versions)
    for view in (apache_kafka.as_user("alice", "SCRAM-SHA-256"), apache_kafka.over_ssl()):
        md = AdminClient(view.client_config()).list_topics(timeout=10)
        assert list(md.brokers) == [1]
        # A failing test that used the view gets the node's log attached.
        assert view.cluster is apache_kafka and view.log_tail().strip()
    assert "Transition from STARTING to STARTED" in apache_kafka.log_path.read_text()


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


# -- librdkafka mock cluster ------------------------------------------------------

PRODUCE, METADATA, FIND_COORDINATOR, JOIN_GROUP = 0, 3, 10, 11
NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, MESSAGE_TOO_LARGE = 6, 7, 10
TOPIC_AUTHORIZATION_FAILED = 29


def leaders(broker, topic: str) -> dict[int, int]:
    md = AdminClient(broker.client_config()).list_topics(topic, timeout=10)
    return {p.id: p.leader for p in md.topics[topic].partitions.values()}


def wait_until(predicate, seconds: float, what: str):
    """Poll ``predicate`` (returns a value or None) for at most ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds}s waiting for {what}")
        time.sleep(0.05)


def test_mock_cluster_brokers_and_metadata(mock_cluster):
    assert mock_cluster.kind == "mock"
    assert sorted(mock_cluster.brokers) == [1, 2, 3]
    ports = {port for _, port in mock_cluster.brokers.values()}
    assert {int(a.rsplit(":", 1)[1]) for a in mock_cluster.bootstrap.split(",")} == ports
    for host, port in mock_cluster.brokers.values():
        assert host == "127.0.0.1"
        assert PRODUCE in api_versions(host, port)
    topic = unique_topic("meta")
    create_topic(mock_cluster, topic, 6, replication_factor=3)
    md = AdminClient(mock_cluster.client_config()).list_topics(topic, timeout=10)
    assert {b.id: (b.host, b.port) for b in md.brokers.values()} == mock_cluster.brokers
    parts = md.topics[topic].partitions
    assert sorted(parts) == list(range(6))
    assert all(p.leader in mock_cluster.brokers and len(p.replicas) == 3 for p in parts.values())


def test_mock_set_leader_moves_partition(mock_cluster):
    topic = unique_topic("leader")
    create_topic(mock_cluster, topic, 2, replication_factor=3)
    before = leaders(mock_cluster, topic)
    target = 1 if before[0] != 1 else 2
    mock_cluster.set_leader(topic, 0, target)
    after = wait_until(
        lambda: (ls := leaders(mock_cluster, topic))[0] == target and ls, 10, "leader move"
    )
    assert after == {0: target, 1: before[1]}
    # Records produced now land on the new leader and read back exactly.
    items = [(0, b"k", b"after-move")]
    assert produce(mock_cluster, topic, items) == [Record(0, 0, b"k", b"after-move")]


def test_mock_broker_down_and_up(fresh_mock_cluster):
    mock = fresh_mock_cluster
    host, port = mock.brokers[2]
    mock.broker_down(2)
    with pytest.raises(OSError):
        api_versions(host, port, timeout=2.0)
    for other in (1, 3):
        assert PRODUCE in api_versions(*mock.brokers[other])
    mock.broker_up(2)
    assert PRODUCE in wait_until(lambda: _try_api_versions(host, port), 10, "broker 2 back")


def _try_api_versions(host: str, port: int):
    try:
        return api_versions(host, port, timeout=1.0)
    except OSError:
        return None


def test_mock_push_errors_are_retried(fresh_mock_cluster):
    mock = fresh_mock_cluster
    topic = unique_topic("retry")
    create_topic(mock, topic, 1)
    mock.start_request_tracking()
    mock.push_errors(PRODUCE, [NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT])
    acked = produce(mock, topic, [(0, b"k", b"once")], {"retry.backoff.ms": 10})
    assert acked == [Record(0, 0, b"k", b"once")]
    produce_requests = [r for r in mock.requests() if r.api_key == PRODUCE]
    assert len(produce_requests) == 3  # two failed attempts, then the stored one
    assert consume(mock, topic, 1, 1) == [Record(0, 0, b"k", b"once")]


def test_mock_push_errors_non_retriable_reaches_client(mock_cluster):
    topic = unique_topic("fatal")
    create_topic(mock_cluster, topic, 1)
    mock_cluster.push_errors(PRODUCE, [MESSAGE_TOO_LARGE])
    with pytest.raises(RuntimeError, match="MSG_SIZE_TOO_LARGE"):
        produce(mock_cluster, topic, [(0, b"k", b"v")])


def test_mock_broker_error_rtts_and_rtt(fresh_mock_cluster):
    mock = fresh_mock_cluster
    topic = unique_topic("rtts")
    create_topic(mock, topic, 1)
    leader = leaders(mock, topic)[0]
    mock.push_broker_errors_rtt(leader, PRODUCE, [(NOT_LEADER_OR_FOLLOWER, 0), (0, 0)])
    assert mock.broker_error_stack_cnt(leader, PRODUCE) == 2
    assert produce(mock, topic, [(0, b"a", b"1")], {"retry.backoff.ms": 10}) == [
        Record(0, 0, b"a", b"1")
    ]
    assert mock.broker_error_stack_cnt(leader, PRODUCE) == 0

    mock.set_rtt(leader, 300)
    start = time.monotonic()
    assert produce(mock, topic, [(0, b"b", b"2")]) == [Record(0, 1, b"b", b"2")]
    assert time.monotonic() - start >= 0.3  # the injected delay is really applied


def join_group_brokers(mock, topic: str, group: str) -> set[int]:
    """Brokers that received JoinGroup from a consumer of ``group`` (request tracking)."""
    from confluent_kafka import Consumer

    mock.clear_requests()
    consumer = Consumer(mock.client_config({"group.id": group, "session.timeout.ms": 6000}))
    try:
        consumer.subscribe([topic])

        def joins():
            consumer.poll(0.1)
            return [r.broker_id for r in mock.requests() if r.api_key == JOIN_GROUP]

        return set(wait_until(joins, 15, "JoinGroup"))
    finally:
        consumer.close()


def test_mock_set_coordinator_routes_group_requests(fresh_mock_cluster):
    mock = fresh_mock_cluster
    topic = unique_topic("coord")
    create_topic(mock, topic, 1)
    group = unique_topic("group")
    mock.start_request_tracking()
    (default,) = join_group_brokers(mock, topic, group)
    target = 1 if default != 1 else 2
    mock.set_coordinator("group", group, target)
    assert join_group_brokers(mock, topic, group) == {target}


def test_mock_set_apiversion_and_topic_error(fresh_mock_cluster):
    mock_cluster = fresh_mock_cluster
    assert api_versions(*mock_cluster.brokers[1])[METADATA][1] > 4
    mock_cluster.set_apiversion(METADATA, 0, 4)
    for host, port in mock_cluster.brokers.values():
        assert api_versions(host, port)[METADATA] == (0, 4)

    topic = unique_topic("denied")
    create_topic(mock_cluster, topic, 1)
    mock_cluster.topic_set_error(topic, TOPIC_AUTHORIZATION_FAILED)
    md = AdminClient(mock_cluster.client_config()).list_topics(topic, timeout=10)
    assert md.topics[topic].error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_mock_control_errors_are_clear(mock_cluster):
    from harness.mock_cluster import MockClusterError

    with pytest.raises(MockClusterError, match="BROKER_NOT_AVAILABLE"):
        mock_cluster.set_leader(unique_topic("x"), 0, 42)
    with pytest.raises(MockClusterError, match="unknown op"):
        mock_cluster.call("no_such_op")


# -- kcat interop (kcat's librdkafka 2.0.2 works with the mock, not with Tansu) ----


def require_kcat(kcat):
    return kcat or missing("kcat")


def test_kcat_produces_confluent_reads(mock_cluster, kcat):
    import subprocess

    kcat = require_kcat(kcat)
    topic = unique_topic("kcat")
    create_topic(mock_cluster, topic, 2)
    items = [(i % 2, b"kk%02d" % i, b"from-kcat-%02d" % i) for i in range(20)]
    for partition in (0, 1):
        lines = b"".join(k + b"\t" + v + b"\n" for p, k, v in items if p == partition)
        subprocess.run(
            [kcat, "-P", "-b", mock_cluster.bootstrap, "-t", topic, "-p", str(partition),
             "-K", "\t", "-X", "api.version.request=true"],
            input=lines, check=True, timeout=30, capture_output=True,
        )
    want = sorted(
        Record(p, sum(1 for q, _, _ in items[:i] if q == p), k, v) for i, (p, k, v) in enumerate(items)
    )
    assert consume(mock_cluster, topic, 2, len(items)) == want


def test_confluent_produces_kcat_reads(mock_cluster, kcat):
    import subprocess

    kcat = require_kcat(kcat)
    topic = unique_topic("kcat-read")
    create_topic(mock_cluster, topic, 1)
    items = [(0, b"key%d" % i, b"value %d" % i) for i in range(10)]
    produce(mock_cluster, topic, items)
    out = subprocess.run(
        [kcat, "-C", "-b", mock_cluster.bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
         "-c", str(len(items)), "-e", "-f", "%p|%o|%k|%s\\n"],
        check=True, timeout=30, capture_output=True,
    ).stdout
    assert out.splitlines() == [b"0|%d|key%d|value %d" % (i, i, i) for i in range(len(items))]


def test_external_settings_from_environment():
    assert external_from_env({}) is None
    cluster = external_from_env(
        {
            "KAFKA_BOOTSTRAP": "kafka.example:9093",
            "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "KAFKA_SASL_USERNAME": "u",
            "KAFKA_SASL_PASSWORD": "p",
        }
    )
    assert cluster.kind == "external"
    assert cluster.client_config() == {
        "bootstrap.servers": "kafka.example:9093",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": "p",
    }
    tls = external_from_env({"KAFKA_BOOTSTRAP": "h:1", "KAFKA_SECURITY_PROTOCOL": "ssl"})
    assert tls.client_config() == {"bootstrap.servers": "h:1", "security.protocol": "SSL"}


# -- Apache Kafka's jars ----------------------------------------------------------------------

FETCH_KAFKA = Path(__file__).resolve().parents[2] / "tools" / "fetch_kafka.sh"


def _fetch_kafka(tmp_path: Path, cache: Path) -> subprocess.CompletedProcess:
    """tools/fetch_kafka.sh with a PATH holding only sed and dirname (no java, no mvn)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("sed", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "KAFKA_FAST_CACHE": str(cache)}
    return subprocess.run(["/bin/bash", str(FETCH_KAFKA)], env=env, capture_output=True,
                          text=True, timeout=30)


def test_fetch_kafka_without_java_says_what_to_install(tmp_path):
    done = _fetch_kafka(tmp_path, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert line.startswith("fetch_kafka: java not found") and "Maven" in line
    assert not (tmp_path / "cache").exists()


def test_fetch_kafka_with_jars_cached_prints_one_line(tmp_path):
    cache = tmp_path / "cache"
    libs = cache / f"kafka-{kafka_version()}" / "libs"
    oauth = cache / f"mock-oauth2-server-{mock_version()}" / "libs"
    others = [v for v in matrix_versions() if v != kafka_version()]
    matrix = [cache / f"kafka-{v}" / "libs" for v in others]
    tools = cache / f"kafka-{tools_v4_version()}" / "libs"
    for folder in (libs, oauth, *matrix, tools):
        folder.mkdir(parents=True)
        (folder / ".complete").touch()
    done = _fetch_kafka(tmp_path, cache)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"fetch_kafka: Apache Kafka {kafka_version()} cached in {libs}",
        *(f"fetch_kafka: Apache Kafka {v} (version matrix) cached in {folder}"
          for v, folder in zip(others, matrix, strict=True)),
        f"fetch_kafka: Apache Kafka {tools_v4_version()} (Java tools for ApiVersions v4 "
        f"brokers) cached in {tools}",
        f"fetch_kafka: mock-oauth2-server {mock_version()} cached in {oauth}"]


def test_missing_kafka_jars_name_the_fetch_script(monkeypatch, tmp_path):
    monkeypatch.setenv("KAFKA_FAST_CACHE", str(tmp_path))
    reason = apache_kafka_missing()
    assert reason is not None
    assert "tools/fetch_kafka.sh" in reason and kafka_version() in reason
