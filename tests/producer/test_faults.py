"""Faults on the 3-broker mock cluster (idempotence, acks=all): every record exactly once and
in order per partition; plus failures that need no broker at all."""

from __future__ import annotations

import re
import signal
import socket
import threading
import time

import pytest
from harness.apache_kafka import require_apache_kafka, start_apache_kafka
from harness.topics import create_topic, unique_topic
from readback import read_confluent

from kafka_fast import KafkaError, KafkaException, Producer

PRODUCE = 0  # API keys
INIT_PRODUCER_ID = 22


def _values(count: int) -> list[bytes]:
    return [b"%09d" % i for i in range(count)]


def _until_received(cluster, broker: int) -> None:
    """Wait until ``broker`` has taken the Produce errors pushed for it (the request is there)."""
    deadline = time.monotonic() + 10
    while cluster.broker_error_stack_cnt(broker, PRODUCE) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert cluster.broker_error_stack_cnt(broker, PRODUCE) == 0


def _assert_exactly_once_in_order(broker, topic: str, partitions: int, count: int,
                                  keys_per_partition: dict[int, list[bytes]]) -> None:
    got = read_confluent(broker, topic, partitions, count, timeout=60)
    assert len(got) == count, f"{len(got) - count} duplicate(s)"
    for p in range(partitions):
        values = [g.value for g in got if g.partition == p]
        assert values == keys_per_partition[p]
        offsets = [g.offset for g in got if g.partition == p]
        assert offsets == list(range(len(offsets)))


def _produce_all(p: Producer, topic: str, partitions: int, count: int, pace: float,
                 chunk: int = 2000) -> tuple[dict[int, list[bytes]], list]:
    """Produce ``count`` records round-robin over partitions, ``pace`` s between chunks."""
    errors = []
    want: dict[int, list[bytes]] = {q: [] for q in range(partitions)}

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)

    for i, v in enumerate(_values(count)):
        q = i % partitions
        want[q].append(v)
        p.produce(topic, v, partition=q, on_delivery=on_delivery if i % 97 == 0 else None)
        if i % chunk == chunk - 1:
            p.poll(0)
            time.sleep(pace)
    return want, errors


def test_leader_moves_while_producing(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("moves")
    partitions, count = 4, 200_000
    create_topic(cluster, topic, partitions, replication_factor=3)
    stop = threading.Event()
    moves = []

    def mover():
        n = 0
        while not stop.wait(0.25):
            n += 1
            for q in range(partitions):
                cluster.set_leader(topic, q, 1 + (n + q) % 3)
            moves.append(n)

    thread = threading.Thread(target=mover, daemon=True)
    conf = cluster.client_config({"acks": "all", "enable.idempotence": True,
                                  "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    with Producer(conf) as p:
        thread.start()
        try:
            want, errors = _produce_all(p, topic, partitions, count, pace=0.01)
            assert p.flush(60) == 0
        finally:
            stop.set()
            thread.join()
    assert errors == []
    assert len(moves) >= 4
    _assert_exactly_once_in_order(cluster, topic, partitions, count, want)


def test_broker_down_then_up(fresh_mock_cluster):
    """Records for a leader that is down wait and are delivered once it is back, in order.

    The first third is acknowledged before the broker goes down. librdkafka's mock cluster
    does not drop an idempotent producer's duplicate: a request it had stored before the
    broker went down, its answer lost, is stored again when retried, so a bounce with requests
    in flight cannot show exactly-once on it. Apache Kafka drops them:
    tests/integration/test_apache_kafka.py kills every node of a cluster in turn under load
    and reads back exactly the acknowledged records."""
    cluster = fresh_mock_cluster
    topic = unique_topic("bounce")
    partitions, count = 3, 30_000
    create_topic(cluster, topic, partitions, replication_factor=3)
    for q in range(partitions):
        cluster.set_leader(topic, q, 1 + q)
    conf = cluster.client_config({"acks": "all", "linger.ms": 5,
                                  "queue.buffering.max.messages": 1_000_000})
    reports = []
    with Producer(conf) as p:
        values = _values(count)
        want = {q: [] for q in range(partitions)}
        for i, v in enumerate(values):
            if i == count // 3:
                assert p.flush(60) == 0
                cluster.broker_down(2)
            if i == 2 * count // 3:
                time.sleep(1.0)
                cluster.broker_up(2)
            q = i % partitions
            want[q].append(v)
            p.produce(topic, v, partition=q,
                      on_delivery=lambda err, msg: reports.append(err))
            if i % 1000 == 0:
                p.poll(0)
        assert p.flush(60) == 0
    assert reports == [None] * count
    _assert_exactly_once_in_order(cluster, topic, partitions, count, want)


@pytest.mark.parametrize("codes", [
    [KafkaError.NOT_LEADER_OR_FOLLOWER] * 3,
    [KafkaError.REQUEST_TIMED_OUT] * 2,
    [KafkaError.NOT_ENOUGH_REPLICAS] * 3,
    [KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.REQUEST_TIMED_OUT,
     KafkaError.NOT_ENOUGH_REPLICAS],
    [KafkaError.UNKNOWN_PRODUCER_ID],
    [KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER],
], ids=["not_leader", "timed_out", "not_enough_replicas", "mixed", "unknown_producer_id",
        "out_of_order"])
def test_injected_produce_errors_are_retried_once(fresh_mock_cluster, codes):
    cluster = fresh_mock_cluster
    topic = unique_topic("inject")
    create_topic(cluster, topic, 2, replication_factor=3)
    conf = cluster.client_config({"acks": "all", "retry.backoff.ms": 10})
    reports = []
    with Producer(conf) as p:
        assert p.list_topics(topic, 10).topics[topic].error is None
        cluster.push_errors(PRODUCE, codes)
        want = {0: [], 1: []}
        for i, v in enumerate(_values(200)):
            want[i % 2].append(v)
            p.produce(topic, v, partition=i % 2, on_delivery=lambda e, m: reports.append(
                (e, m.partition(), m.value())))
            if i % 50 == 49:
                p.flush(30)
        assert p.flush(30) == 0
    assert [r[0] for r in reports] == [None] * 200
    _assert_exactly_once_in_order(cluster, topic, 2, 200, want)


def test_non_retriable_error_reaches_the_callback(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("fatal-code")
    create_topic(cluster, topic, 1)
    reports = []
    with Producer(cluster.client_config({"acks": "all"})) as p:
        assert p.list_topics(topic, 10).topics[topic].error is None
        cluster.push_errors(PRODUCE, [KafkaError.TOPIC_AUTHORIZATION_FAILED])
        p.produce(topic, b"refused", on_delivery=lambda e, m: reports.append((e, m.value())))
        p.flush(10)
        p.produce(topic, b"accepted", on_delivery=lambda e, m: reports.append((e, m.value())))
        assert p.flush(10) == 0
    assert reports[0][0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert reports[0][1] == b"refused"
    assert reports[1] == (None, b"accepted")
    got = read_confluent(cluster, topic, 1, 1)
    assert [g.value for g in got] == [b"accepted"]


def test_oversize_record_is_refused_and_the_producer_keeps_working(mock_cluster):
    topic = unique_topic("oversize")
    create_topic(mock_cluster, topic, 1)
    with Producer(mock_cluster.client_config({"message.max.bytes": 100_000})) as p:
        with pytest.raises(KafkaException) as info:
            p.produce(topic, b"x" * 100_001)
        assert info.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
        assert "100001 bytes exceeds message.max.bytes=100000" in info.value.args[0].str()
        p.produce(topic, b"y" * 99_000, b"k")
        p.produce(topic, b"after")
        assert len(p) == 2
        assert p.flush(10) == 0
    got = read_confluent(mock_cluster, topic, 1, 2)
    assert [g.value for g in got] == [b"y" * 99_000, b"after"]


def _dead_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_unreachable_bootstrap_times_out_deliveries():
    reports = []
    conf = {"bootstrap.servers": _dead_address(), "message.timeout.ms": 3000}
    with Producer(conf) as p:
        for i in range(10):
            p.produce("nowhere", b"v%d" % i, on_delivery=lambda e, m: reports.append((e, m)))
        start = time.monotonic()
        assert p.flush(2) == 10
        took = time.monotonic() - start
        assert 1.9 <= took < 2.6
        deadline = time.monotonic() + 10
        while len(reports) < 10 and time.monotonic() < deadline:
            p.poll(0.2)
        assert len(p) == 0
    assert [e.code() for e, _ in reports] == [KafkaError._MSG_TIMED_OUT] * 10
    assert [m.value() for _, m in reports] == [b"v%d" % i for i in range(10)]
    assert time.monotonic() - start >= 2.9


def test_buffer_error_when_the_queue_is_full():
    conf = {"bootstrap.servers": _dead_address(), "queue.buffering.max.messages": 10,
            "message.timeout.ms": 1000}
    with Producer(conf) as p:
        for _ in range(10):
            p.produce("nowhere", b"v")
        with pytest.raises(BufferError, match="Queue full"):
            p.produce("nowhere", b"one too many")
        assert len(p) == 10
        p.purge()
        assert p.poll(1) >= 10  # ten reports, plus client events (broker down)
        assert len(p) == 0
        p.produce("nowhere", b"room again")
        assert len(p) == 1
        p.purge()


def test_failures_without_a_callback_are_raised_from_flush():
    conf = {"bootstrap.servers": _dead_address(), "message.timeout.ms": 500}
    p = Producer(conf)
    try:
        p.produce("nowhere", b"lost?")
        with pytest.raises(KafkaException) as info:
            p.flush(5)
        err = info.value.args[0]
        assert err.code() == KafkaError._MSG_TIMED_OUT
        assert "1 record(s) to nowhere" in err.str()
    finally:
        p.close(0)


def test_purge_in_flight_reports_purged_records(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("purge")
    create_topic(cluster, topic, 1)
    reports = []
    # The five slow records linger into one batch: once a request is in flight, all are.
    with Producer(cluster.client_config({"linger.ms": 300})) as p:
        assert p.list_topics(topic, 10).topics[topic].error is None
        leader = p.list_topics(topic, 10).topics[topic].partitions[0].leader
        p.produce(topic, b"first")  # connected, producer id known
        assert p.flush(10) == 0
        cluster.set_rtt(leader, 3000)
        for i in range(5):
            p.produce(topic, b"slow-%d" % i, on_delivery=lambda e, m: reports.append(
                (e.code() if e else None, m.value())))
        deadline = time.monotonic() + 5
        while p._sender.inflight_requests == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert p._sender.inflight_requests > 0
        p.purge(in_queue=False)
        assert p.poll(1) >= 5
        assert len(p) == 0
        cluster.set_rtt(leader, 0)
    assert sorted(reports) == [(KafkaError._PURGE_INFLIGHT, b"slow-%d" % i) for i in range(5)]


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_record_purged_in_flight_is_not_sent_again_when_refused_late(fresh_mock_cluster,
                                                                       idempotent):
    """Purged in flight, then refused with a retriable error: the answer is ignored (no retry
    writes the record after its report said purged)."""
    cluster = fresh_mock_cluster
    topic = unique_topic("purge-late")
    create_topic(cluster, topic, 1)
    reports = []
    conf = cluster.client_config({"enable.idempotence": idempotent, "retry.backoff.ms": 10})
    with Producer(conf) as p:
        leader = p.list_topics(topic, 10).topics[topic].partitions[0].leader
        p.produce(topic, b"first")
        assert p.flush(10) == 0
        cluster.start_request_tracking()
        cluster.push_broker_errors_rtt(leader, PRODUCE,
                                       [(KafkaError.NOT_ENOUGH_REPLICAS, 1000)])
        p.produce(topic, b"purged", on_delivery=lambda e, m: reports.append((e, m.value())))
        _until_received(cluster, leader)  # in flight; refused in 1 s
        p.purge(in_queue=False)
        assert p.poll(1) == 1
        time.sleep(1.5)  # the refusal has come
        p.produce(topic, b"after", on_delivery=lambda e, m: reports.append((e, m.value())))
        assert p.flush(10) == 0
    assert [(e.code() if e else None, v) for e, v in reports] == [
        (KafkaError._PURGE_INFLIGHT, b"purged"), (None, b"after")]
    # "purged" sent once, "after" once; an idempotent producer takes one new epoch (for the
    # purge's sequence gap), not a second one for a failed attempt to send "purged" again.
    sent = [r.api_key for r in cluster.requests() if r.api_key in (PRODUCE, INIT_PRODUCER_ID)]
    assert sent == ([PRODUCE, INIT_PRODUCER_ID, PRODUCE] if idempotent else [PRODUCE, PRODUCE])
    got = read_confluent(cluster, topic, 1, 2, timeout=30)
    assert [(g.offset, g.value) for g in got] == [(0, b"first"), (1, b"after")]


def test_delivery_report_only_error(mock_cluster):
    topic = unique_topic("only-err")
    create_topic(mock_cluster, topic, 1)
    reports = []
    conf = mock_cluster.client_config({"delivery.report.only.error": True,
                                       "on_delivery": lambda e, m: reports.append(e)})
    with Producer(conf) as p:
        for i in range(10):
            p.produce(topic, b"ok-%d" % i)
        assert p.flush(10) == 0
        assert reports == []
        p.produce(topic, b"x", partition=0)
        p.purge()
        p.poll(1)
    assert [e.code() for e in reports] == [KafkaError._PURGE_QUEUE]


def test_keyless_records_spread_over_partitions_in_sticky_runs(mock_cluster):
    """Null keys: one partition per run of records (KIP-480), moving on with
    sticky.partitioning.linger.ms, so every partition gets records."""
    topic = unique_topic("sticky")
    create_topic(mock_cluster, topic, 4)
    placed = []
    conf = mock_cluster.client_config({"sticky.partitioning.linger.ms": 5, "linger.ms": 1})
    with Producer(conf) as p:
        p.list_topics(topic, 10)
        for _run in range(40):
            for _ in range(25):
                p.produce(topic, b"v", on_delivery=lambda e, m: placed.append(m.partition()))
            time.sleep(0.01)
        assert p.flush(10) == 0
    assert len(placed) == 1000
    assert set(placed) == {0, 1, 2, 3}
    runs = sum(1 for a, b in zip(placed, placed[1:], strict=False) if a != b) + 1
    assert runs < 200  # runs of records, not one partition per record


@pytest.mark.parametrize("code", [KafkaError.NOT_LEADER_OR_FOLLOWER,
                                  KafkaError.UNKNOWN_TOPIC_OR_PARTITION])
def test_a_first_batch_refused_is_not_overtaken_by_the_batches_behind_it(fresh_mock_cluster,
                                                                         code):
    """A partition's first batch of a producer epoch that comes back with a retriable error
    (a new topic's partition not yet ready on its leader) must not be overtaken by the
    batches sent behind it: a broker without state for the producer would take those, and the
    first batch could then never be written. Until the first batch is acknowledged, one batch
    of the partition is in flight."""
    cluster = fresh_mock_cluster
    topic = unique_topic("first-batch")
    create_topic(cluster, topic, 1)
    values = [b"%04d" % i for i in range(1000)]
    reports = []
    conf = cluster.client_config({"batch.num.messages": 100, "retry.backoff.ms": 200,
                                  "linger.ms": 0})
    with Producer(conf) as p:
        assert p.list_topics(topic, 10).topics[topic].error is None
        cluster.push_errors(PRODUCE, [code])
        assert p.produce_batch(topic, values, 0,
                               on_delivery=lambda e, m: reports.append((e, m.offset()))) == 1000
        assert p.flush(30) == 0
    assert sorted(reports) == [(None, i) for i in range(1000)]
    _assert_exactly_once_in_order(cluster, topic, 1, 1000, {0: values})


def test_reports_of_a_partition_come_in_production_order_when_answers_do_not(
        fresh_mock_cluster):
    """Batch A's answer comes late from the partition's old leader while batch B, written
    after it and sent to the new leader, is answered at once: the log holds A before B and
    the delivery reports come A before B too (as the records were produced)."""
    cluster = fresh_mock_cluster
    topic = unique_topic("report-order")
    create_topic(cluster, topic, 1, replication_factor=3)
    cluster.set_leader(topic, 0, 1)
    reports: list[tuple[bytes, int]] = []
    conf = cluster.client_config({"acks": "all", "enable.idempotence": True, "linger.ms": 0,
                                  "batch.num.messages": 1,
                                  "topic.metadata.refresh.interval.ms": 50})
    with Producer(conf) as p:
        def report(err, msg):
            assert err is None, err
            reports.append((msg.value(), msg.offset()))

        p.produce(topic, b"first", partition=0, on_delivery=report)
        assert p.flush(10) == 0  # the partition has an acknowledged batch: pipelining on
        cluster.push_broker_errors_rtt(1, PRODUCE, [(0, 3000)])  # A's answer: 3 s late
        p.produce(topic, b"A", partition=0, on_delivery=report)
        p.poll(0.3)  # A is on its way to broker 1
        cluster.set_leader(topic, 0, 2)
        deadline = time.monotonic() + 10
        while p.list_topics(topic, 5).topics[topic].partitions[0].leader != 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(0.2)  # the producer's own metadata refresh (every 50 ms) saw it too
        p.produce(topic, b"B", partition=0, on_delivery=report)
        assert p.flush(20) == 0
    assert reports == [(b"first", 0), (b"A", 1), (b"B", 2)]
    _assert_exactly_once_in_order(cluster, topic, 1, 3, {0: [b"first", b"A", b"B"]})


def test_a_batch_that_cannot_be_encoded_fails_alone(kafka, monkeypatch):
    """A batch whose encoding fails (here: out of memory in its builder) is reported failed
    with the reason; the partition's later records are still delivered and reported (on
    Apache Kafka: no broker fault is needed)."""
    from kafka_fast.producer import accumulator

    builds = []
    real = accumulator.RecordBatchBuilder

    class FailingSecond:
        """The record engine's builder, whose second batch fails to build."""

        def __init__(self, **options):
            self.builder = real(**options)

        def __getattr__(self, name):
            return getattr(self.builder, name)

        def __len__(self):
            return len(self.builder)

        def build(self):
            builds.append(len(self.builder))
            if len(builds) == 2:
                raise MemoryError("no room for the batch")
            return self.builder.build()

    monkeypatch.setattr(accumulator, "RecordBatchBuilder", FailingSecond)
    topic = unique_topic("encode-fails")
    create_topic(kafka, topic, 1)
    reports = []
    conf = kafka.client_config({"acks": "all", "enable.idempotence": True,
                                       "linger.ms": 0})
    with Producer(conf) as p:
        for value in (b"r0", b"r1", b"r2"):
            p.produce(topic, value, partition=0,
                      on_delivery=lambda e, m: reports.append((e, m.value(), m.offset())))
            assert p.flush(20) == 0
    assert builds == [1, 1, 1]
    (e0, v0, o0), (e1, v1, _), (e2, v2, o2) = reports
    assert (e0, v0, o0) == (None, b"r0", 0)
    assert v1 == b"r1" and e1.code() == KafkaError._FAIL
    assert "batch cannot be encoded: MemoryError('no room for the batch')" in e1.str()
    assert (e2, v2, o2) == (None, b"r2", 1)
    _assert_exactly_once_in_order(kafka, topic, 1, 2, {0: [b"r0", b"r2"]})


@pytest.mark.parametrize(("conf", "written"), [
    ({"enable.idempotence": True}, [b"first", b"a", b"b"]),
    ({"enable.idempotence": False, "max.in.flight.requests.per.connection": 1},
     [b"first", b"a", b"b"]),
    # No order promised (several requests in flight, no idempotence): "b" does not wait.
    ({"enable.idempotence": False, "max.in.flight.requests.per.connection": 5},
     [b"first", b"b", b"a"]),
], ids=["idempotent", "one-in-flight", "unordered"])
def test_a_batch_for_a_new_leader_waits_for_the_answer_of_the_previous_one(
        fresh_mock_cluster, conf, written):
    """A leader moves while a batch is in flight to the previous one, which refuses it late:
    the batch behind it is not written first. (The mock cluster checks no sequence numbers of
    a producer without a transactional id, so only the client can keep the order here.)"""
    cluster = fresh_mock_cluster
    topic = unique_topic("handover")
    create_topic(cluster, topic, 2, replication_factor=3)
    cluster.set_leader(topic, 0, 3)
    cluster.set_leader(topic, 1, 1)
    reports = []
    # Partition 1's records go over a second connection to its leader, so the metadata
    # asked for below is not answered after the late refusal on the first.
    conf = {"acks": "all", "retry.backoff.ms": 10, "produce.connections.per.broker": 2, **conf}
    with Producer(cluster.client_config(conf)) as p:
        p.produce(topic, b"first", partition=1)
        assert p.flush(10) == 0
        cluster.push_broker_errors_rtt(1, PRODUCE, [(KafkaError.NOT_LEADER_OR_FOLLOWER, 3000)])
        p.produce(topic, b"a", partition=1,
                  on_delivery=lambda e, m: reports.append((e, m.value())))
        _until_received(cluster, 1)  # "a" reached broker 1, which answers in 3 s
        cluster.set_leader(topic, 1, 2)
        asked = time.monotonic()
        assert p.list_topics(topic, 10).topics[topic].partitions[1].leader == 2
        assert time.monotonic() - asked < 2.5  # known before the refusal
        p.produce(topic, b"b", partition=1,
                  on_delivery=lambda e, m: reports.append((e, m.value())))
        assert p.flush(10) == 0
    # Reports come in production order either way.
    assert reports == [(None, b"a"), (None, b"b")]
    got = read_confluent(cluster, topic, 2, 3, timeout=30)
    assert [(g.partition, g.offset, g.value) for g in got] == [
        (1, o, v) for o, v in enumerate(written)]


def test_a_timed_out_record_says_what_it_waited_for(fresh_mock_cluster):
    cluster = fresh_mock_cluster
    topic = unique_topic("held")
    create_topic(cluster, topic, 1)
    cluster.set_leader(topic, 0, 2)
    reports = []
    conf = cluster.client_config({"message.timeout.ms": 1500, "acks": "all"})
    with Producer(conf) as p:
        assert p.list_topics(topic, 10).topics[topic].partitions[0].leader == 2
        cluster.broker_down(2)
        p.produce(topic, b"held", on_delivery=lambda e, m: reports.append((e, m.value())))
        p.flush(10)
        cluster.broker_up(2)
        # A retried record names the error of its last attempt.
        cluster.push_errors(PRODUCE, [KafkaError.NOT_ENOUGH_REPLICAS] * 200)
        p.produce(topic, b"refused", on_delivery=lambda e, m: reports.append((e, m.value())))
        p.flush(10)
        cluster.clear_errors(PRODUCE)
    assert [(e.code(), v) for e, v in reports] == [
        (KafkaError._MSG_TIMED_OUT, b"held"), (KafkaError._MSG_TIMED_OUT, b"refused")]
    held, refused = (e.str() for e, _ in reports)
    # (the mock cluster leaves a broker that is down out of its metadata)
    assert held == (f"Local: Message timed out (1 record(s) of {topic} [0] waited 1.5 s: "
                    f"its leader, broker 2, was missing from the metadata)"), held
    assert "last error: Broker: Messages are rejected since there are fewer in-sync" in refused, \
        refused


def test_a_record_for_a_stopped_apache_kafka_leader_says_so(tmp_path):
    require_apache_kafka()
    kafka = start_apache_kafka(tmp_path, brokers=1)
    try:
        kafka.create_topic("held", 1)
        reports = []
        conf = {"bootstrap.servers": kafka.bootstrap, "message.timeout.ms": 2000}
        with Producer(conf) as p:
            assert p.list_topics("held", 10).topics["held"].partitions[0].leader == 1
            kafka.stop_node(1, signal.SIGKILL)
            p.produce("held", b"v", on_delivery=lambda e, m: reports.append(e))
            p.flush(10)
    finally:
        kafka.discard()
    (err,) = reports
    assert err.code() == KafkaError._MSG_TIMED_OUT
    # The leader is named; as unreachable, or (once no broker answered and the client went
    # back to its bootstrap address) with the brokers forgotten.
    assert re.fullmatch(r"Local: Message timed out \(1 record\(s\) of held \[0\] waited 2 s: "
                        r"(no connection to its leader, broker 1 \(\w+\)|no broker was known "
                        r"\(every broker had been unreachable: the client went back to "
                        r"bootstrap.servers; its leader was broker 1\))\)", err.str()), err.str()
