"""The core client paths on every Apache Kafka release of the matrix (the pom's
``kafka.matrix.versions``), one node per release shared by the module: produce with each
codec, idempotence, transactions, consume, classic and KIP-848 groups, admin, offsets for
times. Every test compares exact records or offsets through its ``cell``; the outcome of
each (feature, release) is stored for tools/broker_matrix.py (docs/compatibility.md)."""

from __future__ import annotations

import ast
import time
from pathlib import Path

import pytest
from consumer_support import as_tuple, make_items, produce_confluent, read_all
from harness import create_topic, unique_topic, wait_for_topic
from harness.reference_client import Record, consume, produce
from matrix import CODECS, FEATURE_IDS

from kafka_fast import Consumer, KafkaError, Producer, TopicPartition
from kafka_fast.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

pytestmark = pytest.mark.timeout(120)

READ = {"auto.offset.reset": "earliest", "enable.auto.commit": False,
        "fetch.wait.max.ms": 100}


def _produce_ours(broker, topic: str, items: list[tuple[int, bytes | None, bytes]],
                  extra: dict | None = None) -> list[Record]:
    """Produce ``(partition, key, value)`` with kafka_fast; the acknowledged records."""
    producer = Producer(broker.client_config(dict({"linger.ms": 5}, **(extra or {}))))
    acked: list[Record] = []
    errors: list = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked.append(Record(msg.partition(), msg.offset(), msg.key(), msg.value()))

    for partition, key, value in items:
        producer.produce(topic, value=value, key=key, partition=partition, on_delivery=report)
    assert producer.flush(30) == 0
    assert not errors, errors
    return sorted(acked)


def _items(n: int, partitions: int, tag: str) -> list[tuple[int, bytes | None, bytes]]:
    return [(i % partitions, None if i % 7 == 3 else f"k{i}".encode(),
             f"{tag}-{i}-".encode() * (1 + i % 5)) for i in range(n)]


def _expected(items: list[tuple[int, bytes | None, bytes]]) -> list[Record]:
    """The records ``items`` become on a fresh topic: offsets 0, 1, ... per partition."""
    next_offset: dict[int, int] = {}
    out = []
    for partition, key, value in items:
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        out.append(Record(partition, offset, key, value))
    return sorted(out)


@pytest.mark.feature("produce-{codec}")
@pytest.mark.parametrize("codec", CODECS)
def test_produce_with_codec(matrix_kafka, cell, codec):
    topic = unique_topic(f"mx-{codec}")
    create_topic(matrix_kafka, topic, 2)
    items = _items(300, 2, codec)
    acked = _produce_ours(matrix_kafka, topic, items, {"compression.type": codec})
    cell.records(acked, _expected(items))
    cell.records(consume(matrix_kafka, topic, 2, len(items)), acked)


@pytest.mark.feature("idempotence")
def test_idempotent_producer(matrix_kafka, cell):
    topic = unique_topic("mx-idem")
    create_topic(matrix_kafka, topic, 3)
    items = _items(600, 3, "idem")
    acked = _produce_ours(matrix_kafka, topic, items,
                          {"enable.idempotence": True, "acks": "all",
                           "max.in.flight.requests.per.connection": 5, "linger.ms": 0,
                           "batch.num.messages": 20})
    cell.records(acked, _expected(items))
    cell.records(consume(matrix_kafka, topic, 3, len(items)), acked)


@pytest.mark.feature("transactions")
def test_transactions_commit_and_abort(matrix_kafka, cell):
    topic = unique_topic("mx-txn")
    create_topic(matrix_kafka, topic, 1)
    producer = Producer(matrix_kafka.client_config({
        "transactional.id": unique_topic("mx-tid"), "linger.ms": 5}))
    producer.init_transactions(30)
    sent: list[list[bytes]] = []
    for txn, (count, commit) in enumerate([(10, True), (5, False), (3, True)]):
        values = [f"t{txn}-{i}".encode() for i in range(count)]
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value, partition=0)
        # Written before the abort, so the aborted records are in the log (an abort drops
        # records still queued in the client).
        assert producer.flush(30) == 0
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
        sent.append(values)
    # A control record (marker) follows each transaction: 10 records, marker, 5 aborted,
    # marker, then the last 3 at offsets 17-19.
    committed = ([Record(0, i, None, v) for i, v in enumerate(sent[0])]
                 + [Record(0, 17 + i, None, v) for i, v in enumerate(sent[2])])
    everything = (committed[:10] + [Record(0, 11 + i, None, v) for i, v in enumerate(sent[1])]
                  + committed[10:])
    cell.records(consume(matrix_kafka, topic, 1, 13, {"isolation.level": "read_committed"}),
                 committed)
    cell.records(consume(matrix_kafka, topic, 1, 18, {"isolation.level": "read_uncommitted"}),
                 everything)
    with Consumer(matrix_kafka.client_config(dict(READ, **{
            "group.id": unique_topic("mx-rc"), "isolation.level": "read_committed"}))) as ours:
        ours.assign([TopicPartition(topic, 0, 0)])
        got = [Record(m.partition(), m.offset(), m.key(), m.value())
               for m in read_all(ours, 13)]
        cell.records(got, committed)
        cell.offsets(ours.get_watermark_offsets(TopicPartition(topic, 0), timeout=10), (0, 21))


@pytest.mark.feature("consume")
def test_consume_by_assign(matrix_kafka, cell):
    topic = unique_topic("mx-consume")
    create_topic(matrix_kafka, topic, 3)
    expected = produce_confluent(matrix_kafka, topic, make_items(90, 3, "c"))
    with Consumer(matrix_kafka.client_config(dict(READ, **{
            "group.id": unique_topic("mx-c")}))) as ours:
        ours.assign([TopicPartition(topic, p, 0) for p in range(3)])
        cell.records(sorted(as_tuple(m) for m in read_all(ours, 90, how="consume")), expected)
        ours.seek(TopicPartition(topic, 1, 25))
        tail = [as_tuple(m) for m in read_all(ours, 5)]
        cell.records(tail, [r for r in expected if r[0] == 1 and r[1] >= 25])
        cell.offsets([tp.offset for tp in ours.position(
            [TopicPartition(topic, p) for p in range(3)])], [30, 30, 30])


def _group_round(broker, cell, protocol: str) -> None:
    """Two members in turn: the first reads everything and commits, the second resumes at
    the commits and reads only what came after."""
    topic = unique_topic(f"mx-{protocol}")
    create_topic(broker, topic, 2)
    first = produce_confluent(broker, topic, make_items(40, 2, "a"))
    group = unique_topic(f"mx-g-{protocol}")
    conf = broker.client_config(dict(READ, **{"group.id": group, "group.protocol": protocol,
                                              "session.timeout.ms": 10000}))
    with Consumer(conf) as member:
        member.subscribe([topic])
        cell.records(sorted(as_tuple(m) for m in read_all(member, 40)), first)
        committed = member.commit(asynchronous=False)
        cell.offsets(sorted((tp.partition, tp.offset) for tp in committed), [(0, 20), (1, 20)])
        cell.offsets(sorted((tp.partition, tp.offset) for tp in member.committed(
            [TopicPartition(topic, p) for p in range(2)], timeout=10)), [(0, 20), (1, 20)])
    more = produce_confluent(broker, topic, make_items(6, 2, "b"))
    with Consumer(conf) as member:
        member.subscribe([topic])
        cell.records(sorted(as_tuple(m) for m in read_all(member, 6)), more)
        assert read_all(member, 1, timeout=1.0) == []


def _refused_consumer_group(broker, cell) -> None:
    """A release without KIP-848: the member reports an error naming the protocol and gets
    no partitions."""
    topic = unique_topic("mx-nokip848")
    create_topic(broker, topic, 1)
    conf = broker.client_config(dict(READ, **{"group.id": unique_topic("mx-g"),
                                              "group.protocol": "consumer"}))
    with Consumer(conf) as member:
        member.subscribe([topic])
        deadline = time.monotonic() + 20
        err = None
        while err is None and time.monotonic() < deadline:
            msg = member.poll(0.2)
            if msg is not None and msg.error() is not None:
                err = msg.error()
        # Kafka 3.9 knows ConsumerGroupHeartbeat but has the protocol switched off.
        assert err is not None and err.code() == KafkaError.UNSUPPORTED_VERSION, err
        assert "does not support group.protocol=consumer" in err.str(), err
        assert "use group.protocol=classic" in err.str(), err
        assert member.assignment() == []
    cell.refused()


@pytest.mark.feature("group-classic")
def test_classic_group(matrix_kafka, cell):
    _group_round(matrix_kafka, cell, "classic")


@pytest.mark.feature("group-consumer")
def test_kip848_group(matrix_kafka, cell):
    if cell.supported:
        _group_round(matrix_kafka, cell, "consumer")
    else:
        _refused_consumer_group(matrix_kafka, cell)


@pytest.mark.feature("admin")
def test_admin(matrix_kafka, cell):
    topic = unique_topic("mx-admin")
    with AdminClient(matrix_kafka.client_config()) as admin:
        created = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1,
                                                config={"retention.ms": "123456"})],
                                      operation_timeout=10)
        assert created[topic].result(20) is None
        # CreateTopics answers once the controller has the topic; the broker that
        # answers DescribeConfigs may learn of it a moment later (as in Kafka's docs).
        wait_for_topic(matrix_kafka, topic, 1)
        resource = ConfigResource(ResourceType.TOPIC, topic)
        assert admin.describe_configs([resource])[resource].result(20)[
            "retention.ms"].value == "123456"
        alter = ConfigResource("topic", topic, incremental_configs=[
            ConfigEntry("retention.ms", "654321", incremental_operation=AlterConfigOpType.SET)])
        assert admin.incremental_alter_configs([alter])[alter].result(20) is None
        deadline = time.monotonic() + 10
        while (admin.describe_configs([resource])[resource].result(20)["retention.ms"].value
               != "654321" and time.monotonic() < deadline):
            time.sleep(0.1)
        assert admin.describe_configs([resource])[resource].result(20)[
            "retention.ms"].value == "654321"
        assert admin.create_partitions([NewPartitions(topic, 3)],
                                       operation_timeout=10)[topic].result(20) is None
        deadline = time.monotonic() + 10
        while (len(admin.list_topics(topic, timeout=10).topics[topic].partitions) < 3
               and time.monotonic() < deadline):
            time.sleep(0.1)
        items = [(p, None, f"v{p}-{i}".encode()) for p in range(3) for i in range(p + 2)]
        acked = produce(matrix_kafka, topic, items)
        cell.records(sorted(acked), _expected(items))
        latest = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest()
                                     for p in range(3)})
        cell.offsets({tp.partition: fut.result(20).offset for tp, fut in latest.items()},
                     {0: 2, 1: 3, 2: 4})
        assert admin.delete_topics([topic], operation_timeout=10)[topic].result(20) is None
        deadline = time.monotonic() + 10
        while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
            time.sleep(0.1)
        assert topic not in admin.list_topics(timeout=10).topics


@pytest.mark.feature("offsets-for-times")
def test_offsets_for_times(matrix_kafka, cell):
    topic = unique_topic("mx-times")
    create_topic(matrix_kafka, topic, 2)
    expected = produce_confluent(matrix_kafka, topic, make_items(40, 2, "t"))
    # make_items stamps record i with 1_700_000_000_000 + i, partition i % 2.
    base = 1_700_000_000_000
    with Consumer(matrix_kafka.client_config(dict(READ, **{
            "group.id": unique_topic("mx-t")}))) as ours:
        # p0 holds even i at offset i/2; p1 odd i at (i-1)/2; past the end: -1.
        found = ours.offsets_for_times([TopicPartition(topic, 0, base + 10),
                                        TopicPartition(topic, 1, base + 10)], timeout=10)
        cell.offsets([(tp.partition, tp.offset) for tp in found], [(0, 5), (1, 5)])
        past = ours.offsets_for_times([TopicPartition(topic, 0, base + 39),
                                       TopicPartition(topic, 1, base + 99)], timeout=10)
        cell.offsets([(tp.partition, tp.offset) for tp in past], [(0, -1), (1, -1)])
        ours.assign([TopicPartition(topic, 1, found[1].offset)])
        first = as_tuple(read_all(ours, 1)[0])
        cell.records([first], [r for r in expected if r[0] == 1 and r[1] == 5])
        assert first[5] == base + 11


def test_every_feature_has_one_test_comparing_exactly():
    """Each feature of the matrix is named by exactly one test's mark, and every marked test
    hands its ``cell`` to a comparison (at run time the cell also fails a pass that compared
    no exact record or offset, and stores that outcome as failed)."""
    tree = ast.parse(Path(__file__).read_text())
    named: list[str] = []
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
            continue
        marks = [d for d in node.decorator_list if isinstance(d, ast.Call)
                 and getattr(d.func, "attr", "") == "feature"]
        if not marks:
            continue
        pattern = ast.literal_eval(marks[0].args[0])
        if "{codec}" in pattern:
            named.extend(pattern.format(codec=c) for c in CODECS)
        else:
            named.append(pattern)
        uses = [n for n in ast.walk(node) if isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
             and n.func.value.id == "cell")
            or any(isinstance(a, ast.Name) and a.id == "cell" for a in n.args))]
        assert uses, f"{node.name} never compares through its cell"
    assert sorted(named) == sorted(FEATURE_IDS)
