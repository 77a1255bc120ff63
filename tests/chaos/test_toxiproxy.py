"""Faults between the client and a real 3-node Apache Kafka cluster, through Toxiproxy.

Each broker has a CLIENT listener advertised at the port of its own proxy, so a client
bootstrapped at the proxies reaches every broker only through them, while the brokers
replicate and vote on their PLAINTEXT and CONTROLLER listeners, untouched. A test puts toxics
on one broker's proxy (the leader of partition 0) and checks what must hold:
every record exactly once and in order per partition (idempotent producer, read back directly),
nothing lost by a consumer group, the timeouts honoured, ``error_cb`` told, RSS bounded.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
import toxiproxy_schedule as sched
from harness.apache_kafka import require_apache_kafka
from harness.toxiproxy import ProxiedCluster, require_toxiproxy, start_proxied_cluster

import kafka_fast
from kafka_fast import KafkaError
from kafka_fast.admin import AdminClient

pytestmark = pytest.mark.timeout(150)

RECORDS = 50_000
RSS_LIMIT_MB = 200.0


@pytest.fixture(scope="module")
def proxied(tmp_path_factory) -> ProxiedCluster:
    require_apache_kafka()
    require_toxiproxy()
    cluster = start_proxied_cluster(tmp_path_factory.mktemp("toxiproxy-cluster"))
    yield cluster
    cluster.stop()


@pytest.fixture
def cluster(proxied: ProxiedCluster) -> ProxiedCluster:
    proxied.server.reset()
    yield proxied
    proxied.server.reset()


def test_clients_reach_brokers_only_through_proxies(cluster):
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        md = admin.list_topics(timeout=10)
    assert {b.id: b.port for b in md.brokers.values()} == {
        i: p.port for i, p in cluster.proxies.items()}
    # With every proxy disabled, nothing answers: no direct address leaks to the client.
    for p in cluster.proxies.values():
        p.set_enabled(False)
    try:
        with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin, \
                pytest.raises(kafka_fast.KafkaException):
            admin.list_topics(timeout=3)
    finally:
        for p in cluster.proxies.values():
            p.set_enabled(True)


def _run(cluster: ProxiedCluster, fault: sched.Fault, lib=kafka_fast, client="kafka_fast",
         records: int = RECORDS) -> sched.Outcome:
    out, sent, got = sched.run_fault(lib, client, cluster, fault, records)
    print(out.as_dict())
    # Every record exactly once, in the order sent, per partition (exact record numbers;
    # compare() checked each value against its key).
    assert out.delivered == records and out.failed == {} and not out.wedged, out
    assert got == sent, out
    # kafka_fast reading the same log back (assign, get_watermark_offsets, consume) gets
    # every record as confluent-kafka does.
    assert out.reader_mismatch == "", out
    assert out.group_lost == 0, out
    assert out.rss_growth_mb < RSS_LIMIT_MB, out
    if fault.breaks:
        assert set(out.errors) & set(sched.TRANSPORT_CODES), out
    return out


@pytest.mark.parametrize("fault", list(sched.FAULTS), ids=str)
def test_produce_and_consume_under_fault(cluster, fault):
    _run(cluster, sched.FAULTS[fault])


def test_message_timeout_honoured_when_leader_stops_answering(cluster):
    """The leader's answers stop with its socket open while records are in flight to it:
    every record fails with _MSG_TIMED_OUT close to message.timeout.ms (within 20%), not
    at request.timeout.ms (they waited 30 s for it), and error_cb is told."""
    topic = cluster.topic("toxi-msg-timeout", 1)
    proxy = cluster.proxies[cluster.leader(topic)]
    errors: list[str] = []
    reports: list[tuple[float, int]] = []
    p = kafka_fast.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                             "message.timeout.ms": 6000, "request.timeout.ms": 30000,
                             "error_cb": lambda e: errors.append(e.name())})
    # The connection to the leader is up: the records below go in flight at once.
    p.produce(topic, b"first", partition=0)
    assert p.flush(10) == 0
    proxy.add("timeout", "downstream", timeout=0)
    start = time.monotonic()
    for i in range(20):
        p.produce(topic, b"v%d" % i, b"k%d" % i, partition=0,
                  on_delivery=lambda err, msg: reports.append(
                      (time.monotonic() - start, err.code() if err else 0)))
    remaining = p.flush(15)
    proxy.clear()
    assert remaining == 0
    assert [c for _, c in reports] == [KafkaError._MSG_TIMED_OUT] * 20
    times = [t for t, _ in reports]
    assert 6.0 * 0.8 <= min(times) and max(times) <= 6.0 * 1.2, times
    p.poll(0.5)
    assert set(errors) & set(sched.TRANSPORT_CODES), errors


def test_request_timeout_honoured_then_exactly_once(cluster):
    """The leader stops answering: the request times out after request.timeout.ms (within
    20%, error_cb told), the idempotent producer retries once the answers flow again, and
    every record is written exactly once."""
    topic = cluster.topic("toxi-req-timeout", 1)
    proxy = cluster.proxies[cluster.leader(topic)]
    told: list[tuple[float, str]] = []
    acked: list[int] = []
    start = [0.0]
    p = kafka_fast.Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all",
                             "enable.idempotence": True, "message.timeout.ms": 60000,
                             "request.timeout.ms": 3000,
                             "error_cb": lambda e: told.append(
                                 (time.monotonic() - start[0], e.name()))})
    # The connection to the leader is up (a stalled set-up would be
    # socket.connection.setup.timeout.ms's to end): the records below go in flight at once.
    p.produce(topic, b"first", partition=0)
    assert p.flush(10) == 0
    proxy.add("timeout", "downstream", timeout=0)
    start[0] = time.monotonic()
    for i in range(100):
        p.produce(topic, b"v%d" % i, b"k%d" % i, partition=0,
                  on_delivery=lambda err, msg: acked.append(-1 if err else msg.offset()))
    deadline = time.monotonic() + 10
    while not told and time.monotonic() < deadline:
        p.poll(0.1)
    proxy.clear()
    assert p.flush(30) == 0
    assert told, "error_cb was not told of the timed-out request"
    first = told[0][0]
    assert 3.0 * 0.8 <= first <= 3.0 * 1.2 + 0.2, told
    assert sorted(acked) == list(range(1, 101)), acked
    log = sched.read_log(kafka_fast, cluster.direct, topic, partitions=1)
    assert log[0] == [(None, b"first")] + [(b"k%d" % i, b"v%d" % i) for i in range(100)]


@pytest.mark.parametrize("fault", ["latency", "reset_peer", "limit_data"])
def test_exactly_once_example_under_fault(cluster, fault):
    """examples/exactly_once.py's loop, its faults on the leader of the input's partition 0
    between transactions: every input's result exactly once in the read_committed output."""
    source, target = cluster.topic("eo-in", 2), cluster.topic("eo-out", 1)
    produced = sched.produce_plain(kafka_fast, cluster.direct, source, 2000, partitions=2)
    proxy = cluster.proxies[cluster.leader(source)]
    processed, results = sched.run_example(cluster.bootstrap, cluster.direct, source, target, proxy,
                                     sched.FAULTS[fault])
    keys = Counter(k for k, _ in results)
    assert set(keys) == set(produced) and set(keys.values()) == {1}, (processed, keys)
    assert all(v == produced[k].upper() for k, v in results)
