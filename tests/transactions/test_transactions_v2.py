"""Transactions v2 (KIP-890 part 2) on Apache Kafka, which finalizes transaction.version 2:
no AddPartitionsToTxn or AddOffsetsToTxn from the client (Produce v12 and TxnOffsetCommit v5
add the partition or group), a new producer epoch after every transaction, and a late write
of a finished transaction refused."""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as CTP
from harness import create_topic, unique_topic
from txn_log import read_log, read_records, summary

from kafka_fast import Producer, TopicPartition
from kafka_fast.config import make_config
from kafka_fast.errors import KafkaError
from kafka_fast.net import KafkaClient
from kafka_fast.protocol import messages as m
from kafka_fast.records import encode_batch

pytestmark = pytest.mark.timeout(120)


class _Counting:
    """Wraps a client's ``send``: the API version of every answered request, by name."""

    def __init__(self, client) -> None:
        self.answered: Counter = Counter()
        self._send = client.send

        def send(node, request, **kw):
            fut = self._send(node, request, **kw)
            name = request.NAME
            fut.add_done_callback(lambda f: None if f.exception() else self.answered.update(
                [(name, getattr(f, "api_version", None))]))
            return fut

        client.send = send


def _names(counting: _Counting) -> set[str]:
    return {name for name, _ in counting.answered}


def test_a_consume_transform_produce_round_uses_transactions_v2(apache_kafka):
    topic, source = unique_topic("tv2-out"), unique_topic("tv2-in")
    create_topic(apache_kafka, topic, 2)
    create_topic(apache_kafka, source, 1)
    group = f"tv2-{topic}"
    p = Producer(apache_kafka.client_config({"transactional.id": f"tid-{topic}",
                                             "linger.ms": 2}))
    counting = _Counting(p._client)
    try:
        p.init_transactions(20)
        txn = p._txn
        assert txn.transaction_version == 2
        pid, epoch = txn.producer_id_and_epoch()

        p.begin_transaction()
        p.produce(topic, b"c0", partition=0)
        p.produce_batch(topic, [b"c1", b"c2"], partition=1)
        p.send_offsets_to_transaction([TopicPartition(source, 0, 42)], group, 20)
        p.commit_transaction(20)
        assert txn.producer_id_and_epoch() == (pid, epoch + 1)

        p.begin_transaction()
        p.produce(topic, b"a0", partition=0)
        assert p.flush(20) == 0  # written, then aborted
        p.abort_transaction(20)
        assert txn.producer_id_and_epoch() == (pid, epoch + 2)

        p.begin_transaction()
        p.produce(topic, b"c3", partition=1)
        p.commit_transaction(20)
        assert txn.producer_id_and_epoch() == (pid, epoch + 3)
    finally:
        p.close()

    names = _names(counting)
    assert "AddPartitionsToTxnRequest" not in names and "AddOffsetsToTxnRequest" not in names
    versions = {name: {v for n, v in counting.answered if n == name} for name in names}
    # v13 (topics by ID) where the broker serves it (Kafka 4.4), else v12.
    assert versions["ProduceRequest"] in ({12}, {13})
    assert versions["TxnOffsetCommitRequest"] == {5}
    assert versions["EndTxnRequest"] == {5}

    # The markers carry each transaction's new epoch; the data the epoch it was written with.
    client = KafkaClient(make_config(apache_kafka.client_config(), "consumer")).start()
    try:
        log0 = read_log(client, topic, 0, ended=True)
        log1 = read_log(client, topic, 1, ended=True)
    finally:
        client.close()
    assert summary(log0) == [("data", b"c0"), ("COMMIT", None), ("data", b"a0"),
                             ("ABORT", None)]
    assert summary(log1) == [("data", b"c1"), ("data", b"c2"), ("COMMIT", None),
                             ("data", b"c3"), ("COMMIT", None)]
    assert [e.producer_epoch for e in log0] == [epoch, epoch + 1, epoch + 1, epoch + 2]
    assert [e.producer_epoch for e in log1] == [epoch, epoch, epoch + 1, epoch + 2,
                                                epoch + 3]
    assert all(e.producer_id == pid for e in log0 + log1)

    committed = [(0, 0, None, b"c0"), (1, 0, None, b"c1"), (1, 1, None, b"c2"),
                 (1, 3, None, b"c3")]
    for reader in ("ours", "confluent"):
        got = read_records(apache_kafka, topic, 2, "read_committed", reader=reader,
                           at_least=len(committed))
        assert sorted(got) == committed, reader
    # The offsets went to the group with the first transaction (TxnOffsetCommit v5).
    c = ConfluentConsumer(apache_kafka.client_config({"group.id": group}))
    try:
        assert [tp.offset for tp in c.committed([CTP(source, 0)], timeout=10)] == [42]
    finally:
        c.close()


def test_a_late_write_of_a_finished_transaction_is_refused(apache_kafka):
    """The zombie KIP-890 closes: a Produce with the epoch of a transaction that has ended
    (a request delayed in the network, a paused producer) is refused, and read_committed
    readers never see it."""
    topic = unique_topic("tv2-late")
    create_topic(apache_kafka, topic, 1)
    p = Producer(apache_kafka.client_config({"transactional.id": f"tid-{topic}"}))
    try:
        p.init_transactions(20)
        pid, epoch = p._txn.producer_id_and_epoch()
        p.begin_transaction()
        p.produce(topic, b"kept", partition=0)
        p.commit_transaction(20)
        # The commit marker reaches the partition after EndTxn answers: once a read_committed
        # reader sees the record, the marker (and with it the new epoch) is in the log.
        assert [r[3] for r in read_records(apache_kafka, topic, 1, "read_committed",
                                           reader="confluent", at_least=1)] == [b"kept"]
        client = p._client
        leader = client.wait_metadata([topic], 10).leader(topic, 0)
        late = encode_batch([b"late"], None, producer_id=pid, producer_epoch=epoch,
                            base_sequence=1, transactional=True)
        data = m.ProduceRequest.TopicProduceData
        resp = client.send(leader, m.ProduceRequest(
            transactional_id=f"tid-{topic}", acks=-1, timeout_ms=5000,
            topic_data=[data(name=topic, partition_data=[
                data.PartitionProduceData(index=0, records=late)])]),
            version=12).result(10)  # v12: the topic by name
        code = resp.responses[0].partition_responses[0].error_code
        assert code in (KafkaError.INVALID_PRODUCER_EPOCH, KafkaError.PRODUCER_FENCED), \
            KafkaError(code).name()
        # The producer itself carries on with its new epoch.
        p.begin_transaction()
        p.produce(topic, b"next", partition=0)
        p.commit_transaction(20)
    finally:
        p.close()
    got = read_records(apache_kafka, topic, 1, "read_committed", reader="confluent",
                       at_least=2)
    assert [v for _, _, _, v in sorted(got)] == [b"kept", b"next"]
