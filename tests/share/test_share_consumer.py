"""ShareConsumer (KIP-932) against a real Apache Kafka 4.4 broker:
records split between members, implicit and explicit acknowledgement, redelivery after
RELEASE and after an acquisition lock expires, REJECT, the commit callback, close."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid

import pytest
from harness.apache_kafka import SHARE_LOCK_MS
from share_support import (
    describe_share_group,
    new_group,
    new_topic,
    poll_until,
    produce,
)

from kafka_fast import (
    AcknowledgeType,
    ConcurrentModificationException,
    DeserializingShareConsumer,
    IllegalStateException,
    KafkaError,
    KafkaException,
    Message,
    Messages,
    ShareConsumer,
    TopicPartition,
)
from kafka_fast.consumer import ownership

LOCK = SHARE_LOCK_MS / 1000.0


@pytest.fixture
def bootstrap(apache_share_kafka) -> str:
    """The share-group broker (Apache Kafka 4.4, acquisition locks of SHARE_LOCK_MS)."""
    return apache_share_kafka.bootstrap


def _consumer(bootstrap: str, group: str, **conf) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, **conf})


def _values(msgs) -> list[bytes]:
    return [m.value() for m in msgs]


def _quiet(consumer: ShareConsumer, seconds: float) -> list:
    """Everything ``consumer`` gets within ``seconds``."""
    got: list = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got.extend(consumer.poll(0.5))
    return got


def test_two_consumers_split_the_records(bootstrap):
    topic = new_topic(bootstrap, partitions=3)
    values = [b"%04d" % i + b"x" * 200 for i in range(150)]
    produce(bootstrap, topic, values, partitions=3, batch_each=True)
    group = new_group(bootstrap)
    # Small fetches of a few one-record batches, so that each member acquires some while
    # the other one does.
    conf = {"max.poll.records": 5}
    # The owner check watches both members through joining, sharing and leaving: every
    # field of a ShareGroupMember is written by its client's I/O thread only.
    with ownership.checking() as seen:
        with _consumer(bootstrap, group, **conf) as a, _consumer(bootstrap, group, **conf) as b:
            a.subscribe([topic])
            b.subscribe([topic])
            got: dict[str, list[bytes]] = {"a": [], "b": []}
            deadline = time.monotonic() + 60
            while len(got["a"]) + len(got["b"]) < len(values):
                assert time.monotonic() < deadline, {k: len(v) for k, v in got.items()}
                for name, consumer in (("a", a), ("b", b)):
                    batch = consumer.poll(0.2)
                    assert isinstance(batch, Messages)
                    assert all(m.error() is None and m.delivery_count() == 1 for m in batch)
                    got[name].extend(_values(batch))
            assert sorted(got["a"] + got["b"]) == sorted(values)  # each record exactly once
            assert got["a"] and got["b"]
            assert not _quiet(a, 1.0) and not _quiet(b, 1.0)
        assert seen == []
        assert ownership.watched["ShareGroupMember"] == 2


def test_implicit_mode_accepts_on_the_next_poll(bootstrap):
    topic = new_topic(bootstrap, records=10)
    group = new_group(bootstrap)
    committed: list = []
    with _consumer(bootstrap, group) as a:
        a.set_acknowledgement_commit_callback(lambda offsets, exc: committed.append(
            (offsets, exc)))
        a.subscribe([topic])
        got = poll_until(a, lambda g: len(g) >= 10)
        assert sorted(_values(got)) == sorted(b"v%d" % i for i in range(10))
        assert committed == []
        # The next polls send the acceptance with their ShareFetch.
        deadline = time.monotonic() + 10
        while not committed:
            assert time.monotonic() < deadline
            assert len(a.poll(0.5)) == 0
        assert committed == [({TopicPartition(topic, 0): set(range(10))}, None)]
        time.sleep(LOCK + 1)
        with _consumer(bootstrap, group) as b:
            b.subscribe([topic])
            assert _quiet(b, 2.0) == []
        assert len(a.poll(0.5)) == 0


def test_explicit_release_redelivers_with_delivery_count_2(bootstrap):
    topic = new_topic(bootstrap, records=3)
    group = new_group(bootstrap)
    with _consumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"}) as c:
        c.subscribe([topic])
        first = poll_until(c, lambda g: len(g) >= 3)
        assert [(m.offset(), m.delivery_count()) for m in first] == [(0, 1), (1, 1), (2, 1)]
        c.acknowledge(first[0], AcknowledgeType.ACCEPT)
        c.acknowledge(first[1], AcknowledgeType.RELEASE)
        c.acknowledge(first[2])  # ACCEPT by default
        again = poll_until(c, lambda g: len(g) >= 1, each=lambda m: c.acknowledge(m))
        assert [(m.offset(), m.value(), m.delivery_count()) for m in again] == [(1, b"v1", 2)]
        assert c.commit_sync() == {TopicPartition(topic, 0): None}
        assert c.commit_sync() == {}
        assert _quiet(c, LOCK + 1) == []


def test_record_not_acknowledged_in_time_is_redelivered(bootstrap):
    topic = new_topic(bootstrap, records=2)
    group = new_group(bootstrap)
    committed: list = []
    explicit = {"share.acknowledgement.mode": "explicit"}
    with _consumer(bootstrap, group, **explicit) as a, _consumer(bootstrap, group) as b:
        a.set_acknowledgement_commit_callback(lambda offsets, exc: committed.append(
            (offsets, exc)))
        a.subscribe([topic])
        held = poll_until(a, lambda g: len(g) >= 2)
        assert [m.delivery_count() for m in held] == [1, 1]
        b.subscribe([topic])
        started = time.monotonic()
        later = poll_until(b, lambda g: len(g) >= 2, timeout=LOCK + 20)
        assert time.monotonic() - started >= LOCK - 1.5  # only after the lock expired
        assert [(m.offset(), m.delivery_count()) for m in later] == [(0, 2), (1, 2)]
        # a's acknowledgement comes too late: the broker refuses it.
        for m in held:
            a.acknowledge(m)
        result = a.commit_sync()
        error = result[TopicPartition(topic, 0)]
        assert isinstance(error, KafkaException)
        assert error.args[0].code() == KafkaError.INVALID_RECORD_STATE
        assert committed[-1][0] == {TopicPartition(topic, 0): {0, 1}}
        assert committed[-1][1].args[0].code() == KafkaError.INVALID_RECORD_STATE


def test_reject_archives_the_record(bootstrap):
    topic = new_topic(bootstrap, records=3)
    group = new_group(bootstrap)
    with _consumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"}) as c:
        c.subscribe([topic])
        got = poll_until(c, lambda g: len(g) >= 3)
        c.acknowledge(got[0], AcknowledgeType.REJECT)
        c.acknowledge(got[1], AcknowledgeType.RELEASE)
        c.acknowledge(got[2], AcknowledgeType.REJECT)
        again = poll_until(c, lambda g: len(g) >= 1, each=lambda m: c.acknowledge(m))
        assert [(m.offset(), m.delivery_count()) for m in again] == [(1, 2)]
        assert c.commit_sync() == {TopicPartition(topic, 0): None}
        assert _quiet(c, LOCK + 1) == []


def test_acknowledge_offset_and_commit_async_callback(bootstrap):
    topic = new_topic(bootstrap, records=5)
    group = new_group(bootstrap)
    committed: list = []
    with _consumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"}) as c:
        c.set_acknowledgement_commit_callback(lambda offsets, exc: committed.append(
            (offsets, exc)))
        c.subscribe([topic])
        got = poll_until(c, lambda g: len(g) >= 5)
        for m in got:
            c.acknowledge_offset(topic, 0, m.offset(), AcknowledgeType.ACCEPT)
        with pytest.raises(IllegalStateException, match="offset 4 .* is not in flight"):
            c.acknowledge_offset(topic, 0, 4)
        c.commit_async()
        deadline = time.monotonic() + 10
        while not committed:
            assert time.monotonic() < deadline
            assert len(c.poll(0.2)) == 0
        assert committed == [({TopicPartition(topic, 0): {0, 1, 2, 3, 4}}, None)]
        assert _quiet(c, LOCK + 1) == []


def test_close_commits_pending_acknowledgements_and_leaves(bootstrap):
    topic = new_topic(bootstrap, records=4)
    group = new_group(bootstrap)
    committed: list = []
    c = _consumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"})
    c.set_acknowledgement_commit_callback(lambda offsets, exc: committed.append((offsets, exc)))
    c.subscribe([topic])
    got = poll_until(c, lambda g: len(g) >= 4)
    (member_id,) = describe_share_group(bootstrap, group)
    # Kafka's UUID text form (22 characters of URL-safe base64), as the Java client's
    assert len(member_id) == 22 and uuid.UUID(bytes=base64.urlsafe_b64decode(member_id + "=="))
    for m in got:
        c.acknowledge(m)
    c.close()
    assert committed == [({TopicPartition(topic, 0): {0, 1, 2, 3}}, None)]
    assert describe_share_group(bootstrap, group) == []
    c.close()  # a second close does nothing
    with _consumer(bootstrap, group) as other:
        other.subscribe([topic])
        assert _quiet(other, LOCK + 1) == []


def test_implicit_close_accepts_the_last_poll(bootstrap):
    topic = new_topic(bootstrap, records=3)
    group = new_group(bootstrap)
    with _consumer(bootstrap, group) as c:
        c.subscribe([topic])
        poll_until(c, lambda g: len(g) >= 3)
    with _consumer(bootstrap, group) as other:
        other.subscribe([topic])
        assert _quiet(other, LOCK + 1) == []


def test_deserializing_share_consumer(bootstrap):
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, [b"1", b"2", b"oops"])
    group = new_group(bootstrap)

    def to_int(data, ctx):
        assert ctx.topic == topic
        return int(data)

    conf = {"bootstrap.servers": bootstrap, "group.id": group, "value.deserializer": to_int,
            "share.acknowledgement.mode": "explicit"}
    with DeserializingShareConsumer(conf) as c:
        c.subscribe([topic])
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 3:
            assert time.monotonic() < deadline
            got.extend(c.poll(0.5))
        assert [m.value() for m in got] == [1, 2, b"oops"]
        assert [m.error() for m in got[:2]] == [None, None]
        assert got[2].error().code() == KafkaError._VALUE_DESERIALIZATION
        c.acknowledge(got[0])
        c.acknowledge(got[1])
        c.acknowledge(got[2], AcknowledgeType.REJECT)
        assert c.commit_sync() == {TopicPartition(topic, 0): None}


def test_state_errors(bootstrap):
    topic = new_topic(bootstrap, records=2)
    group = new_group(bootstrap)
    implicit = _consumer(bootstrap, group)
    with pytest.raises(IllegalStateException, match="not subscribed"):
        implicit.poll(0)
    implicit.subscribe([topic])
    assert implicit.subscription() == [topic]
    with pytest.raises(IllegalStateException, match="share.acknowledgement.mode=explicit"):
        implicit.acknowledge_offset(topic, 0, 0)
    implicit.close()
    for call in (lambda: implicit.poll(0), lambda: implicit.subscribe([topic]),
                 implicit.subscription, implicit.unsubscribe, implicit.commit_sync,
                 implicit.commit_async, lambda: implicit.set_acknowledgement_commit_callback(None),
                 lambda: implicit.set_sasl_credentials("u", "p"),
                 lambda: implicit.acknowledge_offset(topic, 0, 0),
                 lambda: implicit.acknowledge(Message(topic, 0, 0))):
        with pytest.raises(IllegalStateException, match="closed"):
            call()

    with _consumer(bootstrap, group, **{"share.acknowledgement.mode": "explicit"}) as c:
        with pytest.raises(ValueError, match="duplicate"):
            c.subscribe([topic, topic])
        with pytest.raises(ValueError, match="empty"):
            c.subscribe([""])
        with pytest.raises(ValueError, match="not \\^regex patterns"):
            c.subscribe(["^share-.*"])
        c.subscribe([topic])
        got = poll_until(c, lambda g: len(g) >= 2)
        with pytest.raises(IllegalStateException, match="2 records of the previous poll"):
            c.poll(0)
        with pytest.raises(ValueError, match=r"invalid ack_type 7: use AcknowledgeType"):
            c.acknowledge(got[0], 7)
        with pytest.raises(TypeError, match="ack_type must be an AcknowledgeType"):
            c.acknowledge(got[0], "ACCEPT")
        with pytest.raises(TypeError, match="message must be a Message"):
            c.acknowledge((topic, 0, 0))
        with pytest.raises(IllegalStateException, match="not in flight"):
            c.acknowledge(Message(topic, 0, 99))
        with pytest.raises(ValueError, match="invalid partition -1"):
            c.acknowledge_offset(topic, -1, 0)
        with pytest.raises(TypeError, match="callback must be callable"):
            c.set_acknowledgement_commit_callback(5)
        for m in got:
            c.acknowledge(m)

        def reenter(offsets, exc):
            with pytest.raises(IllegalStateException, match="from the acknowledgement commit"):
                c.commit_async()
            calls.append(offsets)

        calls: list = []
        c.set_acknowledgement_commit_callback(reenter)
        assert c.commit_sync() == {TopicPartition(topic, 0): None}
        assert calls == [{TopicPartition(topic, 0): {0, 1}}]


def test_second_thread_gets_concurrent_modification(bootstrap):
    topic = new_topic(bootstrap)
    group = new_group(bootstrap)
    with _consumer(bootstrap, group) as c:
        c.subscribe([topic])
        polling = threading.Thread(target=c.poll, args=(2.0,))
        polling.start()
        time.sleep(0.5)
        try:
            with pytest.raises(ConcurrentModificationException,
                               match="not safe for multi-threaded access"):
                c.poll(0)
        finally:
            polling.join()


def test_unsubscribe_leaves_and_subscribe_joins_again(bootstrap):
    topic = new_topic(bootstrap, records=2)
    group = new_group(bootstrap)
    with _consumer(bootstrap, group) as c:
        c.subscribe([topic])
        poll_until(c, lambda g: len(g) >= 2)
        c.unsubscribe()
        assert c.subscription() == []
        assert describe_share_group(bootstrap, group) == []
        produce(bootstrap, topic, [b"v2"])
        c.subscribe([topic])
        got = poll_until(c, lambda g: len(g) >= 1)
        assert [(m.offset(), m.value(), m.delivery_count()) for m in got] == [(2, b"v2", 1)]


def test_a_new_group_starts_at_the_end(bootstrap):
    topic = new_topic(bootstrap, records=3)
    group = f"share-default-{uuid.uuid4().hex[:8]}"  # no share.auto.offset.reset: latest
    with _consumer(bootstrap, group) as c:
        c.subscribe([topic])
        assert _quiet(c, 3.0) == []
        produce(bootstrap, topic, [b"new"])
        got = poll_until(c, lambda g: len(g) >= 1)
        assert [(m.offset(), m.value()) for m in got] == [(3, b"new")]


def test_max_poll_records_bounds_each_poll(bootstrap):
    topic = new_topic(bootstrap)
    produce(bootstrap, topic, [b"%d" % i for i in range(30)], batch_each=True)
    group = new_group(bootstrap)
    sizes: list[int] = []
    with _consumer(bootstrap, group, **{"max.poll.records": 4}) as c:
        c.subscribe([topic])
        got: list = []
        deadline = time.monotonic() + 30
        while len(got) < 30:
            assert time.monotonic() < deadline, len(got)
            batch = c.poll(0.5)
            if len(batch):
                sizes.append(len(batch))
            got.extend(batch)
    # One-record batches: the broker stops at 4 records.
    assert [m.offset() for m in got] == list(range(30))
    assert max(sizes) == 4 and len(sizes) >= 8, sizes


def test_renew_keeps_the_lock_past_its_duration(bootstrap):
    topic = new_topic(bootstrap, records=2)
    group = new_group(bootstrap)
    explicit = {"share.acknowledgement.mode": "explicit"}
    with _consumer(bootstrap, group, **explicit) as a, _consumer(bootstrap, group) as b:
        a.subscribe([topic])
        held = poll_until(a, lambda g: len(g) >= 2)
        b.subscribe([topic])
        others: list = []
        # Renew the locks every half lock duration for twice the duration: b gets nothing.
        deadline = time.monotonic() + 2 * LOCK
        while time.monotonic() < deadline:
            for msg in held:
                a.acknowledge(msg, AcknowledgeType.RENEW)
            assert a.commit_sync() == {TopicPartition(topic, 0): None}
            others.extend(_quiet(b, LOCK / 2))
        assert others == []
        with pytest.raises(IllegalStateException, match="2 records of the previous poll"):
            a.poll(0)
        a.acknowledge(held[0], AcknowledgeType.ACCEPT)
        a.acknowledge(held[1], AcknowledgeType.RELEASE)
        assert a.commit_sync() == {TopicPartition(topic, 0): None}
        again = poll_until(b, lambda g: len(g) >= 1)
        assert [(m.offset(), m.value(), m.delivery_count()) for m in again] == [(1, b"v1", 2)]


def test_poll_serves_client_callbacks(bootstrap):
    topic = new_topic(bootstrap, records=1)
    group = new_group(bootstrap)
    reports: list = []
    threads: set = set()

    def stats_cb(report):
        reports.append(json.loads(report))
        threads.add(threading.get_ident())

    with _consumer(bootstrap, group, **{"statistics.interval.ms": 200,
                                        "stats_cb": stats_cb}) as c:
        c.subscribe([topic])
        poll_until(c, lambda g: len(g) >= 1)
        deadline = time.monotonic() + 10
        while not reports:
            assert time.monotonic() < deadline
            c.poll(0.3)
    assert reports[0]["type"] == "consumer"
    assert threads == {threading.get_ident()}
