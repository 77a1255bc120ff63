"""list_offsets and delete_records on real brokers: exact watermarks after known records,
offsets by time, the last stable offset of an open transaction, records deleted for real."""

from __future__ import annotations

import pytest
from admin_support import admin_for, produce, read
from confluent_kafka import IsolationLevel as RefIsolation
from confluent_kafka import KafkaException as ReferenceException
from confluent_kafka import Producer as ReferenceProducer
from confluent_kafka import TopicPartition as RefTP
from confluent_kafka.admin import AdminClient as ReferenceAdmin
from confluent_kafka.admin import OffsetSpec as RefSpec
from harness import create_topic, unique_topic

from kafka_fast import OFFSET_END, IsolationLevel, TopicPartition
from kafka_fast.admin import DeletedRecords, ListOffsetsResultInfo, OffsetSpec
from kafka_fast.errors import KafkaError, KafkaException

pytestmark = pytest.mark.timeout(90)

# Timestamps out of order on purpose: the largest is not the last record.
TIMES = [5000, 5001, 5009, 5003, 5004, 5005, 5006]


def _outcome(fut):
    try:
        info = fut.result(30)
    except (KafkaException, ReferenceException) as exc:
        return exc.args[0].code()
    return (info.offset, info.timestamp, info.leader_epoch)


def test_latest_is_the_high_watermark_after_n_records(apache_kafka):
    topic = unique_topic("hw")
    create_topic(apache_kafka, topic, 3)
    counts = {0: 17, 1: 0, 2: 5}
    produce(apache_kafka, topic, [(p, b"x%d" % i, 1000 + i)
                                  for p, n in counts.items() for i in range(n)])
    with admin_for(apache_kafka) as admin:
        specs = {TopicPartition(topic, p): OffsetSpec.latest() for p in counts}
        specs.update({TopicPartition(topic, 10 + p): OffsetSpec.earliest() for p in range(1)})
        futures = admin.list_offsets(specs)
        latest = {tp.partition: futures[tp].result(30) for tp in futures if tp.partition < 10}
        assert {p: i.offset for p, i in latest.items()} == counts
        assert all(isinstance(i, ListOffsetsResultInfo) and i.timestamp == -1
                   for i in latest.values())
        # Keys are TopicPartition(topic, partition, spec value), as in confluent-kafka.
        assert sorted((tp.partition, tp.offset) for tp in futures) == [
            (0, -1), (1, -1), (2, -1), (10, -2)]
        missing = futures[TopicPartition(topic, 10)]
        with pytest.raises(KafkaException) as info:
            missing.result(30)
        assert info.value.args[0].code() == KafkaError._UNKNOWN_PARTITION
    from confluent_kafka import Consumer
    oracle = Consumer(apache_kafka.client_config({"group.id": unique_topic("wm")}))
    try:
        assert {p: oracle.get_watermark_offsets(RefTP(topic, p), timeout=10)[1]
                for p in counts} == counts
    finally:
        oracle.close()


def test_offsets_by_time(apache_kafka):
    topic = unique_topic("bytime")
    create_topic(apache_kafka, topic, 1)
    produce(apache_kafka, topic, [(0, b"t%d" % i, ts) for i, ts in enumerate(TIMES)])
    asks = {"earliest": (OffsetSpec.earliest(), RefSpec.earliest()),
            "latest": (OffsetSpec.latest(), RefSpec.latest()),
            "max": (OffsetSpec.max_timestamp(), RefSpec.max_timestamp()),
            "at 5004": (OffsetSpec.for_timestamp(5004), RefSpec.for_timestamp(5004)),
            "at 5001": (OffsetSpec.for_timestamp(5001), RefSpec.for_timestamp(5001)),
            "after all": (OffsetSpec.for_timestamp(9999), RefSpec.for_timestamp(9999))}
    reference = ReferenceAdmin(apache_kafka.client_config())
    ours, theirs = {}, {}
    with admin_for(apache_kafka) as admin:
        for name, (spec, ref_spec) in asks.items():
            (fut,) = admin.list_offsets({TopicPartition(topic, 0): spec}).values()
            ours[name] = _outcome(fut)
            (ref_fut,) = reference.list_offsets({RefTP(topic, 0): ref_spec}).values()
            theirs[name] = _outcome(ref_fut)
    assert ours["earliest"][:2] == (0, -1)
    assert ours["latest"][:2] == (len(TIMES), -1)
    assert ours["max"][:2] == (2, 5009)
    # The first record (by offset) whose timestamp is at or after the time asked for.
    assert ours["at 5001"][:2] == (1, 5001)
    assert ours["at 5004"][:2] == (2, 5009)
    assert ours["after all"][0] == -1
    assert ours == theirs


def test_read_committed_stops_at_an_open_transaction(apache_kafka):
    topic = unique_topic("lso")
    create_topic(apache_kafka, topic, 1)
    producer = ReferenceProducer(apache_kafka.client_config(
        {"transactional.id": unique_topic("txn"), "linger.ms": 0}))
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, b"c%d" % i, partition=0)
    producer.commit_transaction(30)  # records 0-4, commit marker 5
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, b"o%d" % i, partition=0)
    producer.flush(30)  # records 6-8 written, transaction open
    try:
        tp = TopicPartition(topic, 0)
        with admin_for(apache_kafka) as admin:
            committed = admin.list_offsets({tp: OffsetSpec.latest()},
                                           isolation_level=IsolationLevel.READ_COMMITTED)
            uncommitted = admin.list_offsets({tp: OffsetSpec.latest()},
                                             isolation_level=IsolationLevel.READ_UNCOMMITTED)
            default = admin.list_offsets({tp: OffsetSpec.latest()})
            assert [f.result(30).offset for f in committed.values()] == [6]
            assert [f.result(30).offset for f in uncommitted.values()] == [9]
            assert [f.result(30).offset for f in default.values()] == [9]
        reference = ReferenceAdmin(apache_kafka.client_config())
        (ref,) = reference.list_offsets({RefTP(topic, 0): RefSpec.latest()},
                                        isolation_level=RefIsolation.READ_COMMITTED).values()
        assert ref.result(30).offset == 6
        (ref_default,) = reference.list_offsets({RefTP(topic, 0): RefSpec.latest()}).values()
        assert ref_default.result(30).offset == 9  # read_uncommitted by default there too
    finally:
        producer.abort_transaction(30)


def test_latest_and_earliest_as_confluent_kafka_sees_them(broker):
    """Every peer (Tansu reports its high watermark its own way): both clients agree."""
    topic = unique_topic("agree")
    create_topic(broker, topic, 2)
    produce(broker, topic, [(i % 2, b"a%d" % i, 1000 + i) for i in range(9)])
    specs = [("latest", OffsetSpec.latest(), RefSpec.latest()),
             ("earliest", OffsetSpec.earliest(), RefSpec.earliest())]
    reference = ReferenceAdmin(broker.client_config())
    with admin_for(broker) as admin:
        for name, spec, ref_spec in specs:
            ours = admin.list_offsets({TopicPartition(topic, p): spec for p in range(2)})
            theirs = reference.list_offsets({RefTP(topic, p): ref_spec for p in range(2)})
            assert {tp.partition: _outcome(f)[:2] for tp, f in ours.items()} == {
                tp.partition: _outcome(f)[:2] for tp, f in theirs.items()}, name


def test_delete_records_moves_the_low_watermark(apache_kafka):
    topic = unique_topic("delrec")
    create_topic(apache_kafka, topic, 3)
    records = produce(apache_kafka, topic, [(p, f"p{p}-{i}".encode(), 1000 + i)
                                            for p in range(3) for i in range(10)])
    with admin_for(apache_kafka) as admin:
        asked = [TopicPartition(topic, 0, 4), TopicPartition(topic, 1, OFFSET_END),
                 TopicPartition(topic, 2, 0)]
        futures = admin.delete_records(asked)
        assert list(futures) == asked and all(k is a for k, a in zip(futures, asked,
                                                                         strict=True))
        results = [futures[tp].result(30) for tp in asked]
        assert all(isinstance(r, DeletedRecords) for r in results)
        assert [r.low_watermark for r in results] == [4, 10, 0]
        earliest = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest()
                                       for p in range(3)})
        assert {tp.partition: f.result(30).offset for tp, f in earliest.items()} == {
            0: 4, 1: 10, 2: 0}
        beyond = admin.delete_records([TopicPartition(topic, 2, 11)])
        (fut,) = beyond.values()
        with pytest.raises(KafkaException) as info:
            fut.result(30)
        assert info.value.args[0].code() == KafkaError.OFFSET_OUT_OF_RANGE
    # A consumer starting at the beginning sees only what is left.
    got = read(apache_kafka, topic, 16, {"group.id": unique_topic("after-delete"),
                                         "auto.offset.reset": "earliest"})
    assert got == [r for r in records if (r[0] == 0 and r[1] >= 4) or r[0] == 2]


def test_unknown_topics_and_partitions_fail_their_futures_only(apache_kafka):
    topic = unique_topic("known")
    create_topic(apache_kafka, topic, 1)
    produce(apache_kafka, topic, [(0, b"k", 1000)])
    with admin_for(apache_kafka) as admin:
        futures = admin.delete_records([TopicPartition(topic, 0, 1),
                                        TopicPartition(unique_topic("nope"), 0, 1),
                                        TopicPartition(topic, 7, 0)])
        outcomes = []
        for fut in futures.values():
            try:
                outcomes.append(fut.result(30).low_watermark)
            except KafkaException as exc:
                outcomes.append(exc.args[0].code())
    assert outcomes == [1, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION]
