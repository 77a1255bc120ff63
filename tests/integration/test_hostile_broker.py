"""Hostile responses: a proxy in front of Tansu or the mock cluster damages chosen responses
(garbage, truncated, stalled, duplicated, mis-numbered, 1 GiB size prefix) of one API.

For every case: each record gets exactly one delivery report (or is consumed exactly once),
the failure reaches ``error_cb``, memory stays bounded and the client goes on working once
the broker answers well again.
"""

from __future__ import annotations

import resource
import threading
import time

import pytest
from harness.hostile_proxy import HostileProxy
from harness.topics import create_topic, unique_topic

from kafka_fast import Consumer, KafkaError, KafkaException, Producer, TopicPartition

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, API_VERSIONS = 8, 9, 10, 18
ALL_KINDS = ("corrupt", "truncate", "cut", "stall", "duplicate", "misnumber", "oversize")
SOME_KINDS = ("corrupt", "stall", "misnumber")
RECORDS = 40
#: Growth of the process's peak RSS a case may cause (a 1 GiB frame would exceed it).
MEMORY_SLACK = 200 * 1024 * 1024
#: Fast time-outs so that stalled requests fail within the case's time.
FAST = {"request.timeout.ms": 1000, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200,
        "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200,
        "socket.connection.setup.timeout.ms": 3000}


def _cases(apis, kinds):
    return [(api, kind) for api in apis for kind in kinds]


PRODUCER_CASES = (_cases((PRODUCE,), ALL_KINDS)
                  + _cases((METADATA,), ("corrupt", "truncate", "stall", "oversize"))
                  + _cases((API_VERSIONS,), ("corrupt", "truncate")))
CONSUMER_CASES = (_cases((FETCH,), ALL_KINDS)
                  + _cases((LIST_OFFSETS, OFFSET_FETCH, FIND_COORDINATOR, OFFSET_COMMIT),
                           SOME_KINDS))


@pytest.fixture(params=["kafka", "tansu", "mock"])
def target(request):
    """(broker, the upstream addresses the proxy fronts)."""
    if request.param in ("kafka", "tansu"):
        broker = request.getfixturevalue(request.param)
        host, port = broker.bootstrap.split(":")
        return broker, [(host, int(port))]
    cluster = request.getfixturevalue("mock_cluster")
    return cluster, list(cluster.brokers.values())


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _wait_applied(proxy: HostileProxy, api: int, kind: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while proxy.pending(api) and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.parametrize("api, kind", PRODUCER_CASES)
def test_producer_survives_a_hostile_response(target, api, kind):
    broker, upstreams = target
    topic = unique_topic(f"hp{api}{kind}")
    create_topic(broker, topic, 2)
    rss = _peak_rss()
    errors: list[KafkaError] = []
    reports: dict[bytes, list] = {}

    def on_delivery(err, msg):
        reports.setdefault(msg.value(), []).append(err)

    with HostileProxy(upstreams) as proxy:
        proxy.inject(api, kind)
        conf = {"bootstrap.servers": proxy.bootstrap, "error_cb": errors.append,
                "linger.ms": 2, "message.timeout.ms": 20000, **FAST}
        p = Producer(conf)
        try:
            first = [b"%s-%d-a%03d" % (kind.encode(), api, i) for i in range(RECORDS)]
            for i, v in enumerate(first):
                p.produce(topic, v, partition=i % 2, on_delivery=on_delivery)
            assert p.flush(25) == 0
            assert proxy.applied[(api, kind)] == 1, "the fault never hit a response"
            # The broker answers well again: new records go through at once.
            second = [b"%s-%d-b%03d" % (kind.encode(), api, i) for i in range(RECORDS)]
            for i, v in enumerate(second):
                p.produce(topic, v, partition=i % 2, on_delivery=on_delivery)
            assert p.flush(15) == 0
        finally:
            _close_unbounded(p)
    assert reports == {v: [None] for v in first + second}
    assert errors, "the damaged response never reached error_cb"
    assert all(isinstance(e, KafkaError) for e in errors)
    if kind == "oversize":
        assert any("exceeds receive.message.max.bytes (100000000)" in e.str() for e in errors)
    assert _peak_rss() - rss < MEMORY_SLACK
    got = _read_back(broker, topic, 2, len(first) + len(second))
    for q in (0, 1):
        want = [v for i, v in enumerate(first) if i % 2 == q] + \
               [v for i, v in enumerate(second) if i % 2 == q]
        # A Produce answer lost after the broker stored the batch is retried; the mock
        # cluster stores such a retry again (it does not drop idempotent duplicates).
        assert _dedup(got[q]) == want
        if api != PRODUCE or broker.kind != "mock":
            assert got[q] == want


@pytest.mark.parametrize("api, kind", CONSUMER_CASES)
def test_consumer_survives_a_hostile_response(target, api, kind):
    broker, upstreams = target
    topic = unique_topic(f"hc{api}{kind}")
    create_topic(broker, topic, 2)
    values = [b"%s-%d-%03d" % (kind.encode(), api, i) for i in range(RECORDS)]
    with Producer(broker.client_config({"linger.ms": 2})) as p:
        for i, v in enumerate(values):
            p.produce(topic, v, partition=i % 2)
        assert p.flush(15) == 0
    rss = _peak_rss()
    errors: list[KafkaError] = []
    group = unique_topic("g")
    with HostileProxy(upstreams) as proxy:
        proxy.inject(api, kind)
        conf = {"bootstrap.servers": proxy.bootstrap, "group.id": group,
                "error_cb": errors.append, "auto.offset.reset": "earliest",
                "enable.auto.commit": False, "fetch.wait.max.ms": 100, **FAST}
        c = Consumer(conf)
        try:
            c.assign([TopicPartition(topic, 0), TopicPartition(topic, 1)])
            got = _consume(c, len(values), 25)
            _commit(c, topic)
            _wait_applied(proxy, api, kind)
            assert proxy.applied[(api, kind)] == 1, "the fault never hit a response"
            # Serve what is left for error_cb.
            deadline = time.monotonic() + 5
            while not errors and time.monotonic() < deadline:
                c.poll(0.1)
            committed = c.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)],
                                    timeout=10)
        finally:
            c.close()
    assert sorted(got) == sorted(values), "records lost or read twice"
    for q in (0, 1):
        assert [v for v in got if v in values[q::2]] == values[q::2]
    assert [tp.offset for tp in committed] == [RECORDS // 2, RECORDS // 2]
    assert errors, "the damaged response never reached error_cb"
    assert _peak_rss() - rss < MEMORY_SLACK


def _close_unbounded(p: Producer) -> None:
    """close() without a timeout returns once every record has its report."""
    thread = threading.Thread(target=p.close, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "close() did not return"


def _consume(c: Consumer, count: int, timeout: float) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        for msg in c.consume(count, 0.2):
            if msg.error() is None:
                got.append(msg.value())
    # Anything more would be a duplicate.
    for msg in c.consume(count, 0.15):
        if msg.error() is None:
            got.append(msg.value())
    return got


def _commit(c: Consumer, topic: str) -> None:
    """Commit the positions; a commit whose answer was damaged fails and is made again."""
    for _ in range(3):
        try:
            c.commit(asynchronous=False)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() and exc.args[0].code() != KafkaError._TRANSPORT:
                raise
    c.commit(asynchronous=False)


def _read_back(broker, topic: str, partitions: int, count: int) -> dict[int, list[bytes]]:
    from confluent_kafka import OFFSET_BEGINNING
    from confluent_kafka import Consumer as CK
    from confluent_kafka import TopicPartition as CKTP

    c = CK(broker.client_config({"group.id": f"rb-{topic}", "enable.auto.commit": False,
                                 "fetch.wait.max.ms": 50}))
    out: dict[int, list[bytes]] = {q: [] for q in range(partitions)}
    try:
        c.assign([CKTP(topic, q, OFFSET_BEGINNING) for q in range(partitions)])
        n = 0
        deadline = time.monotonic() + 20
        while n < count and time.monotonic() < deadline:
            for msg in c.consume(1000, 0.2):
                if msg.error() is None:
                    out[msg.partition()].append(msg.value())
                    n += 1
        for msg in c.consume(1000, 0.15):
            if msg.error() is None:
                out[msg.partition()].append(msg.value())
    finally:
        c.close()
    return out


def _dedup(values: list[bytes]) -> list[bytes]:
    seen: set[bytes] = set()
    return [v for v in values if not (v in seen or seen.add(v))]



HEARTBEAT, SYNC_GROUP = 12, 14


@pytest.mark.parametrize("api, kind", [(HEARTBEAT, "stall"), (HEARTBEAT, "misnumber"),
                                       (SYNC_GROUP, "truncate")])
def test_group_member_survives_a_hostile_response(mock_cluster, api, kind):
    """Group APIs (mock cluster: Tansu's joins take seconds each)."""
    topic = unique_topic(f"hg{api}{kind}")
    create_topic(mock_cluster, topic, 2)
    values = [b"%s-%d-%03d" % (kind.encode(), api, i) for i in range(RECORDS)]
    with Producer(mock_cluster.client_config({"linger.ms": 2})) as p:
        for i, v in enumerate(values):
            p.produce(topic, v, partition=i % 2)
        assert p.flush(15) == 0
    errors: list[KafkaError] = []
    with HostileProxy(mock_cluster.brokers.values()) as proxy:
        proxy.inject(api, kind)
        c = Consumer({"bootstrap.servers": proxy.bootstrap, "group.id": unique_topic("g"),
                      "error_cb": errors.append, "auto.offset.reset": "earliest",
                      "session.timeout.ms": 6000, "heartbeat.interval.ms": 300,
                      "fetch.wait.max.ms": 100, **FAST})
        try:
            c.subscribe([topic])
            got = _consume(c, len(values), 25)
            deadline = time.monotonic() + 10
            while (proxy.pending(api) or not errors) and time.monotonic() < deadline:
                c.poll(0.1)
            assert proxy.applied[(api, kind)] == 1, "the fault never hit a response"
            assert sorted(c.assignment()) == [TopicPartition(topic, 0),
                                              TopicPartition(topic, 1)]
        finally:
            c.close()
    assert sorted(got) == sorted(values), "records lost or read twice"
    assert errors, "the damaged response never reached error_cb"
