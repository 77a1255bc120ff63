"""KafkaClient against Tansu (plain, SASL-rejecting, behind TLS), with confluent-kafka as
the independent oracle for metadata and written records."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka.admin import AdminClient
from harness import create_topic, unique_topic
from harness.hostile_proxy import HostileProxy
from harness.reference_client import Record, consume

from kafka_fast.cluster import GROUP, TRANSACTION
from kafka_fast.cluster.coordinators import _find_coordinator
from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.net.client import KafkaClient
from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    ProduceRequest,
)
from kafka_fast.records import encode_batch

from .helpers import event_logger, make_client, tcp_connections, wait_until

pytestmark = pytest.mark.timeout(60)


def test_metadata_matches_confluent(real_broker):
    topic = unique_topic("meta")
    create_topic(real_broker, topic, partitions=3)
    oracle = AdminClient(real_broker.client_config()).list_topics(timeout=10)
    with make_client(real_broker) as client:
        view = client.wait_metadata([topic], timeout=10)
        assert {n: (b.host, b.port) for n, b in view.brokers.items()} == {
            b.id: (b.host, b.port) for b in oracle.brokers.values()}
        assert {n: b.port for n, b in view.brokers.items()} == {
            b.id: real_broker.port for b in oracle.brokers.values()}
        assert (view.cluster_id, view.controller_id) == (oracle.cluster_id,
                                                         oracle.controller_id)
        expected = {p.id: p.leader for p in oracle.topics[topic].partitions.values()}
        assert {p: client.leader(topic, p) for p in range(3)} == expected
        assert sorted(view.topics[topic].partitions) == [0, 1, 2]
        node = next(iter(view.brokers))
        # Tansu speaks ApiVersions v0-4 and Metadata v0-12, Kafka 4.3+ Metadata v0-13: the
        # highest common versions.
        assert client.api_version(node, ApiVersionsRequest.API_KEY) == 4
        assert client.api_version(node, MetadataRequest.API_KEY) == (
            12 if real_broker.kind == "tansu" else 13)
        # The bootstrap connection became the broker's connection.
        assert list(client._conns) == [node]


def test_unknown_topic_is_reported_not_created(real_broker):
    topic = unique_topic("absent")
    with make_client(real_broker) as client:
        view = client.request_metadata([topic]).result(10)
        assert view.topics[topic].error == KafkaError.UNKNOWN_TOPIC_OR_PART
        assert client.leader(topic, 0) is None
        with pytest.raises(KafkaException) as info:
            client.wait_metadata([topic], timeout=0.5)
        assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_concurrent_requests_share_one_connection(real_broker):
    before = tcp_connections({real_broker.port})[real_broker.port]
    with make_client(real_broker) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        futures = []
        lock = threading.Lock()

        def worker():
            mine = [client.send(node, MetadataRequest(topics=[])) for _ in range(50)]
            mine += [client.send_any(MetadataRequest(topics=[])) for _ in range(50)]
            mine += [client.request_metadata() for _ in range(25)]
            with lock:
                futures.extend(mine)

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(futures) == 1000
        for fut in futures:
            value = fut.result(30)
            assert node in (value.brokers if isinstance(value.brokers, dict)
                            else {b.node_id for b in value.brokers})
        after = tcp_connections({real_broker.port})[real_broker.port]
        assert len(after - before) == 1


def test_acks_zero_produce_resolves_when_written(real_broker):
    topic = unique_topic("acks0")
    create_topic(real_broker, topic, partitions=1)
    with make_client(real_broker) as client:
        view = client.wait_metadata([topic], timeout=10)
        leader = view.leader(topic, 0)
        batch = encode_batch([b"value-0", b"value-1"], [b"key-0", b"key-1"])
        request = ProduceRequest(acks=0, timeout_ms=5000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
        # v12 names the topic (v13, where served, would need its ID).
        version = min(12, client.api_version(leader, ProduceRequest.API_KEY) or 12)
        assert client.send(leader, request, version=version).result(10) is None
        assert client.in_flight(leader) == 0
    assert consume(real_broker, topic, 1, 2) == [Record(0, 0, b"key-0", b"value-0"),
                                           Record(0, 1, b"key-1", b"value-1")]


def test_coordinators_and_batched_lookup(real_broker):
    with make_client(real_broker) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        client.send(node, MetadataRequest(topics=[])).result(10)
        assert client.api_version(node, FindCoordinatorRequest.API_KEY) == 6
        keys = [unique_topic("grp") for _ in range(3)]
        # From v4 one request carries every key; before, one key per request.
        assert _find_coordinator(GROUP, keys).build(4).coordinator_keys == keys
        assert _find_coordinator(GROUP, keys).build(3).key == keys[0]
        futures = [client.coordinator(GROUP, k) for k in keys]
        futures.append(client.coordinator(TRANSACTION, "txn-" + keys[0]))
        assert [f.result(10) for f in futures] == [node] * 4
        assert client.coordinators.cache[(GROUP, keys[1])] == node


def test_later_request_times_out_behind_a_longer_one(kafka):
    """Two Metadata requests in flight on one connection, both answers swallowed by the
    proxy: the later one, with the shorter timeout, fails at its own deadline (not at the
    first one's 30 s), the connection closes (failing the first) and the next request works."""
    host, port = kafka.bootstrap.split(":")
    with HostileProxy([(host, int(port))]) as proxy, KafkaClient(make_config(
            {"bootstrap.servers": proxy.bootstrap, "request.timeout.ms": 30000},
            "admin")).start() as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        proxy.inject(MetadataRequest.API_KEY, "stall", count=2)
        first = client.send(node, MetadataRequest(topics=[]), timeout_ms=30000)
        assert wait_until(lambda: proxy.pending(MetadataRequest.API_KEY) == 1, 5)
        start = time.monotonic()
        later = client.send(node, MetadataRequest(topics=[]), timeout_ms=1500)
        with pytest.raises(KafkaException) as info:
            later.result(40)
        took = time.monotonic() - start
        assert info.value.args[0].code() == KafkaError._TIMED_OUT
        assert 1.5 * 0.8 <= took < 1.5 * 1.2 + 0.5, took
        with pytest.raises(KafkaException) as info:
            first.result(5)
        assert info.value.args[0].code() == KafkaError._TRANSPORT
        assert proxy.applied[(MetadataRequest.API_KEY, "stall")] == 2
        resp = client.send(node, MetadataRequest(topics=[])).result(10)
        assert {b.node_id for b in resp.brokers} == {node}


def test_idle_connection_is_closed_and_reopened(real_broker):
    before = tcp_connections({real_broker.port})[real_broker.port]
    with make_client(real_broker, connections_max_idle_ms=300) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        assert client.connection_state(node) == "READY"
        assert len(tcp_connections({real_broker.port})[real_broker.port] - before) == 1
        assert wait_until(lambda: client.connection_state(node) == "DISCONNECTED", 5)
        assert tcp_connections({real_broker.port})[real_broker.port] - before == set()
        resp = client.send(node, MetadataRequest(topics=[])).result(10)
        assert {b.node_id for b in resp.brokers} == {node}


def test_unsupported_version_fails_cleanly(real_broker):
    with make_client(real_broker) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        with pytest.raises(KafkaException) as info:
            # past the newest version of the client's schemas and of any broker's
            client.send(node, MetadataRequest(topics=[]),
                        version=MetadataRequest.MAX_VERSION + 1).result(10)
        assert info.value.args[0].code() == KafkaError._UNSUPPORTED_FEATURE
        assert "is not supported by" in str(info.value)
        with pytest.raises(KafkaException) as info:
            client.send(424242, MetadataRequest(topics=[])).result(10)
        assert info.value.args[0].code() == KafkaError._UNKNOWN_BROKER


# -- security ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_rejected_sasl_login_fails_fast(tansu_sasl, mechanism):
    """Tansu with --authentication rejects every login: the request fails with
    _AUTHENTICATION within 5 s, the connection never becomes ready (nothing of the request is
    written), error_cb hears it, and new requests fail at once instead of re-dialling."""
    logger, log = event_logger("sasl")
    errors = []
    conf = tansu_sasl.client_config({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
        "sasl.username": "alice", "sasl.password": "wrong", "logger": logger,
        "error_cb": errors.append})
    topic = unique_topic("never")
    with KafkaClient(make_config(conf, "admin")).start() as client:
        start = time.monotonic()
        create = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=1, replication_factor=1)], timeout_ms=1000)
        with pytest.raises(KafkaException) as info:
            client.send_any(create).result(10)
        assert time.monotonic() - start < 5
        err = info.value.args[0]
        assert err.code() == KafkaError._AUTHENTICATION, err
        assert log.events("ready") == []
        node = log.events("connect")[0].node_id
        for _ in range(20):  # no retry storm
            with pytest.raises(KafkaException) as again:
                client.send(node, MetadataRequest(topics=[])).result(5)
            assert again.value.args[0].code() == KafkaError._AUTHENTICATION
        assert len(log.events("connect")) == 1
        client.serve_events()
        assert KafkaError._AUTHENTICATION in [e.code() for e in errors]
    with KafkaClient(make_config(conf, "admin")).start() as client:
        start = time.monotonic()
        with pytest.raises(KafkaException) as info:
            client.wait_metadata(timeout=10)
        assert info.value.args[0].code() == KafkaError._AUTHENTICATION
        assert time.monotonic() - start < 5


def test_tls_connects_and_verifies_the_ca(tansu_tls):
    topic = unique_topic("tls")
    with make_client(tansu_tls) as client:
        view = client.wait_metadata(timeout=10)
        assert {b.port for b in view.brokers.values()} == {tansu_tls.port}
        node = next(iter(view.brokers))
        create = CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
            name=topic, num_partitions=2, replication_factor=1)], timeout_ms=5000)
        resp = client.send(node, create).result(10)
        assert [(t.name, t.error_code) for t in resp.topics] == [(topic, 0)]
        view = client.wait_metadata([topic], timeout=10)
        assert sorted(view.topics[topic].partitions) == [0, 1]


def test_tls_wrong_ca_fails_cleanly(tansu_tls):
    errors = []
    conf = tansu_tls.client_config({"ssl.ca.location": tansu_tls.wrong_ca_path,
                                    "error_cb": errors.append})
    with KafkaClient(make_config(conf, "admin")).start() as client:
        start = time.monotonic()
        with pytest.raises(KafkaException) as info:
            client.send_any(MetadataRequest(topics=[])).result(10)
        assert time.monotonic() - start < 5
        err = info.value.args[0]
        assert err.code() == KafkaError._SSL
        assert "certificate verify failed" in err.str()
        # The connection fails the request before it reports the error event.
        client.serve_events(5.0)
        assert KafkaError._SSL in [e.code() for e in errors]
