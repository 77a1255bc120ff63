"""The transactional Producer end to end on Tansu and the mock cluster.

read_committed filtering itself (aborted ranges from the Fetch response's aborted-transactions
list) is asserted at the fetch-decoding layer in tests/consumer/test_fetch_decode.py: neither
test broker sends that list, so here read_committed is compared with confluent-kafka's on the
same broker."""

from __future__ import annotations

import pytest
from harness import create_topic, unique_topic
from txn_log import committed_and_aborted, read_log, read_records, summary

from kafka_fast import Producer
from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.net import KafkaClient

pytestmark = pytest.mark.timeout(90)

E = KafkaError
PRODUCE = 0


def _producer(broker, tid: str, **extra) -> Producer:
    conf = {"transactional.id": tid, "transaction.timeout.ms": 10000, "linger.ms": 2}
    conf.update(extra)
    return Producer(broker.client_config(conf))


def _raw_log(broker, topic: str, partition: int):
    client = KafkaClient(make_config({"bootstrap.servers": broker.bootstrap}, "consumer"))
    try:
        return read_log(client.start(), topic, partition, verify_crc=broker.kind != "mock",
                        ended=True)
    finally:
        client.close()


def test_commit_abort_commit(broker):
    topic = unique_topic("txn-cac")
    create_topic(broker, topic, 2)
    reports: list = []
    p = _producer(broker, f"tid-{topic}")
    try:
        p.init_transactions(10)
        # Metadata first: records produce() queues while the topic is unknown can end up after
        # a produce_batch() made once it is known (a producer ordering issue of its own).
        p.list_topics(topic, 10)

        p.begin_transaction()
        for i in range(4):
            p.produce(topic, b"c1-%d" % i, b"k%d" % i, partition=i % 2,
                      on_delivery=lambda err, msg: reports.append((err, msg.value())))
        assert p.produce_batch(topic, [b"c1-b0", b"c1-b1"], partition=0) == 2
        p.commit_transaction(10)
        assert len(p) == 0
        assert sorted(v for _, v in reports) == [b"c1-0", b"c1-1", b"c1-2", b"c1-3"]
        assert all(err is None for err, _ in reports)

        p.begin_transaction()
        p.produce(topic, b"a-0", partition=0)
        p.produce(topic, b"a-1", partition=1)
        assert p.flush(10) == 0  # written, then aborted
        p.produce(topic, b"a-never", partition=0,
                  on_delivery=lambda err, msg: reports.append((err, msg.value())))
        p.abort_transaction(10)
        assert reports[-1][1] == b"a-never" and reports[-1][0].code() == E._PURGE_QUEUE

        p.begin_transaction()
        p.produce_batch(topic, [b"c2-0", b"c2-1"], partition=1)
        p.produce(topic, b"c2-2", partition=0)
        p.commit_transaction(10)
    finally:
        p.close()

    assert summary(_raw_log(broker, topic, 0)) == [
        ("data", b"c1-0"), ("data", b"c1-2"), ("data", b"c1-b0"), ("data", b"c1-b1"),
        ("COMMIT", None), ("data", b"a-0"), ("ABORT", None), ("data", b"c2-2"),
        ("COMMIT", None)]
    assert summary(_raw_log(broker, topic, 1)) == [
        ("data", b"c1-1"), ("data", b"c1-3"), ("COMMIT", None), ("data", b"a-1"),
        ("ABORT", None), ("data", b"c2-0"), ("data", b"c2-1"), ("COMMIT", None)]

    # read_uncommitted: every record in log order, no control record, with both clients.
    every = [
        (0, 0, b"k0", b"c1-0"), (0, 1, b"k2", b"c1-2"), (0, 2, None, b"c1-b0"),
        (0, 3, None, b"c1-b1"), (0, 5, None, b"a-0"), (0, 7, None, b"c2-2"),
        (1, 0, b"k1", b"c1-1"), (1, 1, b"k3", b"c1-3"), (1, 3, None, b"a-1"),
        (1, 5, None, b"c2-0"), (1, 6, None, b"c2-1")]
    for reader in ("ours", "confluent"):
        got = read_records(broker, topic, 2, "read_uncommitted", reader=reader,
                           at_least=len(every))
        assert sorted(got) == every, reader
        for part in (0, 1):  # in offset order within each partition
            offsets = [o for p, o, _, _ in got if p == part]
            assert offsets == sorted(offsets)

    # read_committed: ours returns what confluent-kafka's returns on the same broker (both
    # brokers leave the aborted-transactions list out, so the aborted records are included).
    committed = [r for r in every if not r[3].startswith(b"a-")]
    ours = read_records(broker, topic, 2, "read_committed", reader="ours",
                        at_least=len(committed))
    theirs = read_records(broker, topic, 2, "read_committed", reader="confluent",
                          at_least=len(committed))
    assert sorted(ours) == sorted(theirs)
    assert set(committed) <= set(ours)


def test_failed_produce_requires_abort_then_recovers(fresh_mock_cluster):
    mc = fresh_mock_cluster
    topic = unique_topic("txn-fail")
    create_topic(mc, topic, 1)
    errors: list = []
    p = _producer(mc, f"tid-{topic}")
    try:
        p.init_transactions(10)
        first = p._txn.producer_id_and_epoch()
        p.begin_transaction()
        p.produce(topic, b"ok-0", partition=0)
        assert p.flush(10) == 0
        mc.push_errors(PRODUCE, [E.TOPIC_AUTHORIZATION_FAILED])
        p.produce(topic, b"lost", partition=0,
                  on_delivery=lambda err, msg: errors.append((err.code(), msg.value())))
        with pytest.raises(KafkaException) as info:
            p.commit_transaction(10)
        err = info.value.args[0]
        assert err.code() == E.TOPIC_AUTHORIZATION_FAILED
        assert err.txn_requires_abort() and not err.fatal() and not err.retriable()
        assert errors == [(E.TOPIC_AUTHORIZATION_FAILED, b"lost")]
        with pytest.raises(KafkaException) as info:
            p.produce(topic, b"refused", partition=0)
        assert info.value.args[0].txn_requires_abort()
        p.abort_transaction(10)
        # The failed batch left a gap in the sequence numbers: the abort bumped the epoch.
        assert p._txn.producer_id_and_epoch() == (first[0], first[1] + 1)
        p.begin_transaction()
        p.produce(topic, b"ok-1", partition=0)
        p.commit_transaction(10)
    finally:
        p.close()
    log = _raw_log(mc, topic, 0)
    assert summary(log) == [("data", b"ok-0"), ("ABORT", None), ("data", b"ok-1"),
                            ("COMMIT", None)]
    assert [e.producer_epoch for e in log if e.kind == "data"] == [first[1], first[1] + 1]


def test_older_producer_is_fenced(real_broker):
    topic = unique_topic("txn-fenced")
    create_topic(real_broker, topic, 1)
    tid = f"tid-{topic}"
    old = _producer(real_broker, tid)
    new = _producer(real_broker, tid)
    fatal: list = []
    try:
        old.init_transactions(10)
        old.begin_transaction()
        old.produce(topic, b"old-0", partition=0)
        assert old.flush(10) == 0
        new.init_transactions(10)
        old.produce(topic, b"old-1", partition=0,
                    on_delivery=lambda err, msg: fatal.append(err))
        with pytest.raises(KafkaException) as info:
            old.commit_transaction(10)
        err = info.value.args[0]
        assert err.code() == E.PRODUCER_FENCED and err.fatal()
        # Tansu refuses the fenced producer's Produce with PRODUCER_FENCED, Apache Kafka with
        # INVALID_PRODUCER_EPOCH: fatal either way.
        assert [e.code() for e in fatal] in ([E.PRODUCER_FENCED], [E.INVALID_PRODUCER_EPOCH])
        assert fatal[0].fatal()
        for call in (old.begin_transaction, lambda: old.produce(topic, b"x", partition=0)):
            with pytest.raises(KafkaException) as again:
                call()
            assert again.value.args[0].fatal()
        new.begin_transaction()
        new.produce(topic, b"new-0", partition=0)
        new.commit_transaction(10)
    finally:
        old.close(1)
        new.close()
    assert summary(_raw_log(real_broker, topic, 0)) == [
        ("data", b"old-0"), ("ABORT", None), ("data", b"new-0"), ("COMMIT", None)]


def test_transactional_api_misuse(mock_cluster):
    plain = Producer(mock_cluster.client_config())
    try:
        with pytest.raises(KafkaException) as info:
            plain.init_transactions(1)
        assert info.value.args[0].code() == E._NOT_CONFIGURED
    finally:
        plain.close()
    topic = unique_topic("txn-misuse")
    create_topic(mock_cluster, topic, 1)
    p = _producer(mock_cluster, f"tid-{topic}")
    try:
        p.init_transactions(10)
        with pytest.raises(KafkaException) as info:
            p.produce(topic, b"outside", partition=0)
        assert info.value.args[0].code() == E._STATE
        with pytest.raises(KafkaException) as info:
            p.produce_batch(topic, [b"outside"], partition=0)
        assert info.value.args[0].code() == E._STATE
        assert len(p) == 0
        p.begin_transaction()
        p.produce(topic, b"inside", partition=0)
        p.commit_transaction(10)
        committed, aborted = committed_and_aborted(_raw_log(mock_cluster, topic, 0))
        assert [e.value for e in committed] == [b"inside"] and aborted == []
    finally:
        p.close()
