"""kafka_fast's ShareConsumer and confluent-kafka's ShareConsumer as members of one share
group on Apache Kafka 4.4: records split between them, acknowledgements of one seen by the
other (RELEASE, REJECT, ACCEPT), redelivery counts, acquisition lock expiry and RENEW."""

from __future__ import annotations

import time

import pytest
from harness.apache_kafka import SHARE_LOCK_MS
from share_support import new_group, new_topic, poll_until, produce

from kafka_fast import AcknowledgeType, ShareConsumer, TopicPartition

ck = pytest.importorskip("confluent_kafka", reason="pip install confluent-kafka")

LOCK = SHARE_LOCK_MS / 1000.0
EXPLICIT = {"share.acknowledgement.mode": "explicit"}


@pytest.fixture
def bootstrap(apache_share_kafka) -> str:
    return apache_share_kafka.bootstrap


def _ours(bootstrap: str, group: str, **conf) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **conf})


def _theirs(bootstrap: str, group: str, **conf):
    return ck.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **conf})


def _records(msgs) -> list[tuple[int, bytes, int]]:
    return sorted((m.offset(), m.value(), m.delivery_count()) for m in msgs)


def _quiet(consumer, seconds: float) -> list:
    got: list = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


def test_a_kafka_fast_and_a_confluent_member_split_the_records(bootstrap):
    topic = new_topic(bootstrap, partitions=3)
    values = [b"%04d" % i for i in range(120)]
    produce(bootstrap, topic, values, partitions=3, batch_each=True)
    group = new_group(bootstrap)
    ours = _ours(bootstrap, group, **{"max.poll.records": 5})
    theirs = _theirs(bootstrap, group, **{"max.poll.records": 5})
    try:
        ours.subscribe([topic])
        theirs.subscribe([topic])
        got: dict[str, list] = {"kafka_fast": [], "confluent": []}
        deadline = time.monotonic() + 90
        while len(got["kafka_fast"]) + len(got["confluent"]) < len(values):
            assert time.monotonic() < deadline, {k: len(v) for k, v in got.items()}
            for name, consumer in (("kafka_fast", ours), ("confluent", theirs)):
                for msg in consumer.poll(0.2):
                    assert msg.error() is None and msg.delivery_count() == 1
                    got[name].append((msg.partition(), msg.offset(), msg.value()))
        # Together exactly the records written, each once; both members took some.
        both = got["kafka_fast"] + got["confluent"]
        assert sorted(v for _, _, v in both) == values
        assert sorted((p, o) for p, o, _ in both) == sorted(
            (i % 3, i // 3) for i in range(len(values)))
        assert got["kafka_fast"] and got["confluent"]
        assert not _quiet(ours, 1.0) and not _quiet(theirs, 1.0)
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize("first", ["kafka_fast", "confluent"])
def test_acknowledge_types_seen_by_the_other_client(bootstrap, first):
    topic = new_topic(bootstrap, records=6)
    group = new_group(bootstrap)
    make = {"kafka_fast": _ours, "confluent": _theirs}
    other_name = "confluent" if first == "kafka_fast" else "kafka_fast"
    acker = make[first](bootstrap, group, **EXPLICIT)
    try:
        acker.subscribe([topic])
        got = poll_until(acker, lambda g: len(g) >= 6)
        assert _records(got) == [(i, b"v%d" % i, 1) for i in range(6)]
        kinds = [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT] * 2
        ack_type = ck.AcknowledgeType if first == "confluent" else AcknowledgeType
        for msg in got:
            acker.acknowledge(msg, ack_type(int(kinds[msg.offset()])))
        result = acker.commit_sync()
        if first == "kafka_fast":
            assert result == {TopicPartition(topic, 0): None}
    finally:
        acker.close()
    with make[other_name](bootstrap, group) as other:
        other.subscribe([topic])
        again = poll_until(other, lambda g: len(g) >= 2)
        # Only the released records come back, delivered a second time.
        assert _records(again) == [(1, b"v1", 2), (4, b"v4", 2)]
        assert _quiet(other, LOCK + 1) == []


@pytest.mark.parametrize("holder", ["kafka_fast", "confluent"])
def test_an_expired_lock_hands_the_records_to_the_other_client(bootstrap, holder):
    topic = new_topic(bootstrap, records=3)
    group = new_group(bootstrap)
    held_by = (_ours if holder == "kafka_fast" else _theirs)(bootstrap, group, **EXPLICIT)
    taker = (_theirs if holder == "kafka_fast" else _ours)(bootstrap, group)
    try:
        held_by.subscribe([topic])
        held = poll_until(held_by, lambda g: len(g) >= 3)
        assert _records(held) == [(i, b"v%d" % i, 1) for i in range(3)]
        taker.subscribe([topic])
        started = time.monotonic()
        later = poll_until(taker, lambda g: len(g) >= 3, timeout=LOCK + 30)
        assert time.monotonic() - started >= LOCK - 1.5  # only after the lock ran out
        assert _records(later) == [(i, b"v%d" % i, 2) for i in range(3)]
    finally:
        held_by.close()
        taker.close()


def test_kafka_fast_renews_while_a_confluent_member_waits(bootstrap):
    topic = new_topic(bootstrap, records=2)
    group = new_group(bootstrap)
    ours = _ours(bootstrap, group, **EXPLICIT)
    theirs = _theirs(bootstrap, group)
    try:
        ours.subscribe([topic])
        held = poll_until(ours, lambda g: len(g) >= 2)
        theirs.subscribe([topic])
        seen: list = []
        deadline = time.monotonic() + 2 * LOCK
        while time.monotonic() < deadline:
            for msg in held:
                ours.acknowledge(msg, AcknowledgeType.RENEW)
            assert ours.commit_sync() == {TopicPartition(topic, 0): None}
            seen.extend(_quiet(theirs, LOCK / 2))
        assert seen == []  # held past twice the lock duration
        ours.acknowledge(held[0], AcknowledgeType.RELEASE)
        ours.acknowledge(held[1], AcknowledgeType.ACCEPT)
        assert ours.commit_sync() == {TopicPartition(topic, 0): None}
        again = poll_until(theirs, lambda g: len(g) >= 1)
        assert _records(again) == [(0, b"v0", 2)]
        assert _quiet(theirs, LOCK + 1) == []
    finally:
        ours.close()
        theirs.close()
