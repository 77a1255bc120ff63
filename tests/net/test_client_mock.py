"""KafkaClient against librdkafka's 3-broker mock cluster: discovery, pipelining, one
connection per broker, reconnects with backoff, injected errors."""

from __future__ import annotations

import struct
import threading
import time

import pytest
from confluent_kafka.admin import AdminClient
from harness import unique_topic
from harness.ports import free_port
from harness.wakeups import selects_while_idle

from kafka_fast.cluster import GROUP, coordinator_action
from kafka_fast.cluster import bootstrap as bootstrap_module
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.protocol.messages import (
    ApiVersionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)

from .helpers import event_logger, make_client, tcp_connections, wait_until

pytestmark = pytest.mark.timeout(60)

METADATA = MetadataRequest.API_KEY
FIND_COORDINATOR = FindCoordinatorRequest.API_KEY


def brokers_of(view):
    return {n: (b.host, b.port) for n, b in view.brokers.items()}


def test_discovers_every_broker_and_leader(mock_cluster):
    topic = unique_topic("discover")
    mock_cluster.create_topic(topic, partitions=4, replication_factor=3)
    for p, leader in enumerate([1, 2, 3, 1]):
        mock_cluster.set_leader(topic, p, leader)
    with make_client(mock_cluster) as client:
        view = client.wait_metadata([topic], timeout=10)
        assert brokers_of(view) == mock_cluster.brokers
        assert {p: view.leader(topic, p) for p in range(4)} == {0: 1, 1: 2, 2: 3, 3: 1}
        assert [client.leader(topic, p) for p in range(4)] == [1, 2, 3, 1]
        info = view.topics[topic]
        assert info.error is None
        assert all(sorted(pi.replicas) == [1, 2, 3] for pi in info.partitions.values())
        oracle = AdminClient(mock_cluster.client_config()).list_topics(timeout=10)
        assert (view.cluster_id, view.controller_id) == (oracle.cluster_id,
                                                         oracle.controller_id)

        mock_cluster.set_leader(topic, 0, 3)
        view = client.request_metadata([topic]).result(10)
        assert view.leader(topic, 0) == 3 and client.leader(topic, 0) == 3
        # The bootstrap connection was adopted by the broker it reached: no extra socket.
        assert all(n > 0 for n in client._conns)


def test_api_versions_fallback_and_negotiation(mock_cluster):
    """The mock knows ApiVersions v0-2 only: the v4 request is answered with
    UNSUPPORTED_VERSION and the client retries at the broker's highest version."""
    with make_client(mock_cluster) as client:
        view = client.wait_metadata(timeout=10)
        node = next(iter(view.brokers))
        client.send(node, MetadataRequest(topics=[])).result(10)
        assert client.api_version(node, ApiVersionsRequest.API_KEY) == 2
        # Metadata: the mock's v0-13 against this client's v0-13.
        assert client.api_version(node, METADATA) == 13
        fut = client.send(node, MetadataRequest(topics=[]), version=4)
        fut.result(10)
        assert fut.api_version == 4


def test_pipelining_with_rtt(fresh_mock_cluster):
    """50 requests on one connection with a 50 ms broker RTT: max.in.flight 5 takes about
    a fifth of the serial time (a ratio measured in the same test)."""
    mock = fresh_mock_cluster
    elapsed = {}
    peak = {}
    for window in (1, 5):
        with make_client(mock, max_in_flight=window) as client:
            node = next(iter(client.wait_metadata(timeout=10).brokers))
            client.send(node, MetadataRequest(topics=[])).result(10)
            seen = []
            client.add_poll_hook(lambda n=node, s=seen: s.append(client.in_flight(n)))
            mock.set_rtt(node, 50)
            try:
                start = time.monotonic()
                futures = [client.send(node, MetadataRequest(topics=[])) for _ in range(50)]
                results = [f.result(20) for f in futures]
                elapsed[window] = time.monotonic() - start
            finally:
                mock.set_rtt(node, 0)
            assert all(brokers_of_resp(r) == mock.brokers for r in results)
            peak[window] = max(seen)
    assert peak == {1: 1, 5: 5}
    assert elapsed[1] >= 50 * 0.05 * 0.9
    assert elapsed[5] < 0.5 * elapsed[1], elapsed


def brokers_of_resp(resp):
    return {b.node_id: (b.host, b.port) for b in resp.brokers}


def test_one_connection_per_broker_after_1000_concurrent_requests(mock_cluster):
    topic = unique_topic("conns")
    mock_cluster.create_topic(topic, partitions=3, replication_factor=3)
    ports = {port for _, port in mock_cluster.brokers.values()}
    before = tcp_connections(ports)
    with make_client(mock_cluster) as client:
        client.wait_metadata([topic], timeout=10)
        nodes = sorted(mock_cluster.brokers)
        results: list = []
        errors: list = []
        lock = threading.Lock()

        def worker(w: int) -> None:
            futures = []
            for i in range(125):
                kind = (w + i) % 5
                if kind == 0:
                    futures.append(("any", client.send_any(MetadataRequest(topics=[]))))
                elif kind in (1, 2, 3):
                    futures.append(("node", client.send(nodes[kind - 1],
                                                        MetadataRequest(topics=None))))
                elif i % 2:
                    futures.append(("meta", client.request_metadata([topic])))
                else:
                    futures.append(("coord", client.coordinator(GROUP, f"g{w}-{i % 3}")))
            for kind, fut in futures:
                try:
                    value = fut.result(30)
                except Exception as exc:  # collected and asserted below
                    with lock:
                        errors.append(exc)
                    continue
                with lock:
                    results.append((kind, value))

        threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert len(results) == 1000
        for kind, value in results:
            if kind in ("any", "node"):
                assert brokers_of_resp(value) == mock_cluster.brokers
            elif kind == "meta":
                assert sorted(value.topics[topic].partitions) == [0, 1, 2]
            else:
                assert value in mock_cluster.brokers
        after = tcp_connections(ports)
        mine = {port: after[port] - before[port] for port in ports}
        assert {port: len(s) for port, s in mine.items()} == {port: 1 for port in ports}


def test_dead_first_bootstrap_address_still_connects(mock_cluster, monkeypatch):
    dead = free_port()
    live = mock_cluster.bootstrap.split(",")[0]
    monkeypatch.setattr(bootstrap_module.random, "shuffle", lambda seq: None)  # keep order
    logger, log = event_logger("deadboot")
    conf = {"bootstrap_servers": f"127.0.0.1:{dead},{live}", "logger": logger}
    with make_client(mock_cluster, **conf) as client:
        view = client.wait_metadata(timeout=10)
        assert brokers_of(view) == mock_cluster.brokers
        connects = [(r.host, r.port) for r in log.events("connect")]
        assert connects[0] == ("127.0.0.1", dead)
        assert connects[1] == ("127.0.0.1", int(live.rsplit(":", 1)[1]))
        assert [r.error.code() for r in log.events("closed")][:1] == [KafkaError._TRANSPORT]
        errors = []
        client.events.error_cb = errors.append
        client.serve_events()
        assert KafkaError._TRANSPORT in [e.code() for e in errors]


def test_all_bootstrap_addresses_dead_reports_all_brokers_down(mock_cluster):
    dead = [free_port(), free_port()]
    conf = {"bootstrap.servers": ",".join(f"127.0.0.1:{p}" for p in dead),
            "request.timeout.ms": 1500}
    from kafka_fast.config import make_config
    from kafka_fast.net.client import KafkaClient
    errors = []
    with KafkaClient(make_config({**conf, "error_cb": errors.append}, "admin")) as client:
        start = time.monotonic()
        with pytest.raises(KafkaException) as info:
            client.send_any(MetadataRequest(topics=[])).result(10)
        assert info.value.args[0].code() == KafkaError._TRANSPORT
        assert time.monotonic() - start < 1.0
        wait_until(lambda: (client.serve_events(), KafkaError._ALL_BROKERS_DOWN in
                            [e.code() for e in errors])[1], 5)
        assert KafkaError._ALL_BROKERS_DOWN in [e.code() for e in errors]


def test_broker_down_reconnects_with_growing_backoff(fresh_mock_cluster):
    mock = fresh_mock_cluster
    logger, log = event_logger("backoff")
    with make_client(mock, logger=logger, reconnect_backoff_ms=50,
                     reconnect_backoff_max_ms=800, request_timeout_ms=2000) as client:
        client.wait_metadata(timeout=10)
        node = 1
        client.send(node, MetadataRequest(topics=[])).result(10)
        mock.broker_down(node)
        # Keep asking broker 1 so the client keeps trying to reconnect.
        failures = []
        end = time.monotonic() + 3.2
        while time.monotonic() < end:
            fut = client.send(node, MetadataRequest(topics=[]))
            try:
                fut.result(2)
            except KafkaException as exc:
                failures.append(exc.args[0].code())
            time.sleep(0.01)
        # Delay from each failure to the next attempt: 50 ms doubling, +-20% jitter,
        # capped at 800 ms.
        events = [r for r in log.records if r.node_id == node
                  and r.kafka_event in ("connect", "closed")]
        gaps = [b.ts - a.ts for a, b in zip(events, events[1:], strict=False)
                if a.kafka_event == "closed" and b.kafka_event == "connect"]
        assert len(gaps) >= 5, gaps
        expected = [min(0.8, 0.05 * 2 ** i) for i in range(len(gaps))]
        for gap, base in zip(gaps, expected, strict=True):
            assert base * 0.8 - 0.005 <= gap <= min(base * 1.2, 0.8) + 0.15, (gaps, expected)
        assert set(failures) <= {KafkaError._TRANSPORT}
        mock.broker_up(node)
        resp = wait_until(lambda: _try(client, node), 5)
        assert resp is not None and brokers_of_resp(resp) == mock.brokers
        assert client.connection_state(node) == "READY"


def _try(client, node):
    try:
        return client.send(node, MetadataRequest(topics=[])).result(2)
    except KafkaException:
        return None


def test_request_timeout_then_recovery(fresh_mock_cluster):
    mock = fresh_mock_cluster
    with make_client(mock, request_timeout_ms=300) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        client.send(node, MetadataRequest(topics=[])).result(10)
        mock.set_rtt(node, 1500)
        start = time.monotonic()
        with pytest.raises(KafkaException) as info:
            client.send(node, MetadataRequest(topics=[])).result(5)
        took = time.monotonic() - start
        assert info.value.args[0].code() == KafkaError._TIMED_OUT
        assert 0.25 <= took < 1.0
        mock.set_rtt(node, 0)
        resp = client.send(node, MetadataRequest(topics=[]), timeout_ms=5000).result(10)
        assert brokers_of_resp(resp) == mock.brokers


def test_an_idle_client_wakes_rarely_and_still_times_out_on_time(fresh_mock_cluster):
    """With nothing queued or in flight the I/O thread checks deadlines once a second, not
    every 50 ms; a request sent then is watched at the short interval again."""
    mock = fresh_mock_cluster
    with make_client(mock, request_timeout_ms=300) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        client.send(node, MetadataRequest(topics=[])).result(10)
        calls = selects_while_idle(client.loop.selector, 2.0)
        assert 1 <= len(calls) <= 6, calls  # 40 at the short interval
        mock.set_rtt(node, 1500)
        start = time.monotonic()
        with pytest.raises(KafkaException) as info:
            client.send(node, MetadataRequest(topics=[])).result(5)
        assert info.value.args[0].code() == KafkaError._TIMED_OUT
        assert 0.25 <= time.monotonic() - start < 1.0


def test_unknown_correlation_id_closes_the_connection(fresh_mock_cluster):
    mock = fresh_mock_cluster
    with make_client(mock) as client:
        node = next(iter(client.wait_metadata(timeout=10).brokers))
        client.send(node, MetadataRequest(topics=[])).result(10)
        mock.set_rtt(node, 500)
        pending = client.send(node, MetadataRequest(topics=[]))
        wait_until(lambda: client.in_flight(node) == 1, 2)
        conn = client._conns[node]
        # A response frame (int32 correlation id + body) matching no request in flight.
        stray = memoryview(struct.pack(">i", 0x7FFF0000) + b"\0" * 8)
        client.call_soon(lambda: conn._handle_frame(stray))
        with pytest.raises(KafkaException) as info:
            pending.result(5)
        err = info.value.args[0]
        assert err.code() == KafkaError._TRANSPORT
        assert "correlation id 2147418112 matches no request" in err.str()
        mock.set_rtt(node, 0)
        assert brokers_of_resp(client.send(node, MetadataRequest(topics=[])).result(10)) \
            == mock.brokers


def test_find_coordinator_retries_injected_errors_and_follows_moves(fresh_mock_cluster):
    mock = fresh_mock_cluster
    group = unique_topic("group")
    mock.set_coordinator("group", group, 3)
    mock.start_request_tracking()
    with make_client(mock) as client:
        client.wait_metadata(timeout=10)
        mock.push_errors(FIND_COORDINATOR, [KafkaError.NOT_COORDINATOR,
                                            KafkaError.COORDINATOR_NOT_AVAILABLE,
                                            KafkaError.COORDINATOR_LOAD_IN_PROGRESS])
        assert client.coordinator(GROUP, group).result(10) == 3
        finds = [r for r in mock.requests() if r.api_key == FIND_COORDINATOR]
        assert len(finds) == 4
        # Cached: no new request.
        assert client.coordinator(GROUP, group).result(1) == 3
        assert len([r for r in mock.requests() if r.api_key == FIND_COORDINATOR]) == 4
        mock.set_coordinator("group", group, 2)
        assert coordinator_action(KafkaError.NOT_COORDINATOR) == "rediscover"
        assert coordinator_action(KafkaError.COORDINATOR_LOAD_IN_PROGRESS) == "backoff"
        assert coordinator_action(KafkaError.UNKNOWN_MEMBER_ID) is None
        client.invalidate_coordinator(GROUP, group)
        assert client.coordinator(GROUP, group).result(10) == 2


def test_metadata_topic_errors_and_leaderless_partitions_are_retried(fresh_mock_cluster):
    """LEADER_NOT_AVAILABLE on the topic and a partition without leader: wait_metadata keeps
    asking (with backoff) until the cluster has settled."""
    mock = fresh_mock_cluster
    topic = unique_topic("lna")
    mock.create_topic(topic, partitions=2, replication_factor=1)
    with make_client(mock, retry_backoff_ms=20, retry_backoff_max_ms=100) as client:
        client.wait_metadata(timeout=10)
        mock.topic_set_error(topic, KafkaError.LEADER_NOT_AVAILABLE)
        mock.set_leader(topic, 1, -1)
        mock.start_request_tracking()
        result = {}
        waiter = threading.Thread(target=lambda: result.update(
            view=client.wait_metadata([topic], timeout=10)))
        waiter.start()
        time.sleep(0.4)
        view = client.request_metadata([topic]).result(5)
        assert view.topics[topic].error == KafkaError.LEADER_NOT_AVAILABLE
        mock.topic_set_error(topic, 0)
        time.sleep(0.3)
        view = client.request_metadata([topic]).result(5)
        assert view.topics[topic].error is None and view.leader(topic, 1) is None
        assert "view" not in result
        mock.set_leader(topic, 1, 3)
        waiter.join(10)
        assert result["view"].leader(topic, 1) == 3
        assert result["view"].leader(topic, 0) in mock.brokers
        metas = [r for r in mock.requests() if r.api_key == METADATA]
        assert len(metas) >= 6


def test_a_client_closed_at_once_reports_no_error(caplog):
    """Closing right after creation (before the I/O thread ran) is quiet: no I/O-thread error."""
    import logging

    from kafka_fast import Producer

    caplog.set_level(logging.ERROR, logger="kafka_fast")
    for _ in range(20):
        Producer({"bootstrap.servers": "127.0.0.1:1"}).close(0)
    assert [r.getMessage() for r in caplog.records] == []
