"""TransactionManager against Tansu and the mock cluster, with hand-built transactional
ProduceRequests: markers in the log, fencing, offsets in transactions, injected errors."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as CTP
from harness import create_topic, free_port, unique_topic
from harness.reference_client import Record, consume
from txn_log import HandProducer, read_log, summary

from kafka_fast import TopicPartition
from kafka_fast.errors import KafkaError, KafkaException
from kafka_fast.transactions import TxnState

pytestmark = pytest.mark.timeout(60)

E = KafkaError
INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 22, 24, 25, 26, 28
FIND_COORDINATOR, PRODUCE = 10, 0


#: The transaction protocol each broker kind speaks: Apache Kafka 4.4 finalizes
#: transaction.version 2 (KIP-890) on a new cluster; Tansu and the mock cluster know v1 only.
TRANSACTION_VERSION = {"kafka": 2, "tansu": 1, "mock": 1}


@pytest.fixture
def hand(broker):
    made: list[HandProducer] = []

    def make(tid: str, **extra) -> HandProducer:
        p = HandProducer(broker, tid, **extra)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def broker_is_kafka(broker) -> bool:
    return broker.kind in ("kafka", "external")


def _log(broker, p: HandProducer, topic: str, partition: int = 0):
    return read_log(p.client, topic, partition, verify_crc=broker.kind != "mock", ended=True)


def _committed(broker, group: str, topic: str, partitions: int) -> list[int]:
    c = ConfluentConsumer(broker.client_config({"group.id": group}))
    try:
        got = c.committed([CTP(topic, p) for p in range(partitions)], timeout=10)
        return [tp.offset for tp in got]
    finally:
        c.close()


def test_commit_writes_records_then_commit_markers(broker, hand):
    topic = unique_topic("txn-commit")
    create_topic(broker, topic, 2)
    p = hand(f"tid-{topic}")
    p.txn.init_transactions(10)
    pid, epoch = p.txn.producer_id_and_epoch()
    assert pid >= 0 and epoch >= 0
    assert p.txn.state is TxnState.READY
    p.txn.begin_transaction()
    assert p.txn.state is TxnState.IN_TRANSACTION
    assert p.txn.transaction_version == TRANSACTION_VERSION.get(broker.kind,
                                                                p.txn.transaction_version)
    p.txn.maybe_add_partitions([(topic, 0), (topic, 1)]).result(10)
    if p.txn.transaction_version == 1:
        # Both partitions in one batched AddPartitionsToTxn.
        assert p.txn.partitions() == {(topic, 0), (topic, 1)}
    else:
        # Transactions v2: the broker adds a partition when its first Produce v12 arrives.
        assert p.txn.partitions() == set()
    assert p.produce(topic, 0, [b"a0", b"a1"]) == 0
    assert p.produce(topic, 1, [b"b0"]) == 0
    assert p.produce(topic, 0, [b"a2"]) == 2
    p.txn.commit_transaction(10)
    assert p.txn.state is TxnState.READY
    assert p.txn.partitions() == set()

    log0, log1 = _log(broker, p, topic, 0), _log(broker, p, topic, 1)
    assert summary(log0) == [("data", b"a0"), ("data", b"a1"), ("data", b"a2"), ("COMMIT", None)]
    assert summary(log1) == [("data", b"b0"), ("COMMIT", None)]
    assert [e.offset for e in log0] == [0, 1, 2, 3]
    assert all(e.transactional and e.producer_id == pid for e in log0 + log1)
    # Transactions v2 end every transaction with a new epoch: the markers already carry it,
    # and the next transaction uses it.
    ended = epoch + 1 if p.txn.transaction_version == 2 else epoch
    assert [e.producer_epoch for e in log0 + log1] == [epoch, epoch, epoch, ended, epoch, ended]
    assert p.txn.producer_id_and_epoch() == (pid, ended)
    # An independent reader (read_uncommitted) sees exactly the records, markers skipped.
    got = consume(broker, topic, 2, 4, extra={"isolation.level": "read_uncommitted"})
    assert got == [Record(0, 0, None, b"a0"), Record(0, 1, None, b"a1"),
                   Record(0, 2, None, b"a2"), Record(1, 0, None, b"b0")]


def test_abort_writes_abort_marker_and_next_transaction_commits(broker, hand):
    topic = unique_topic("txn-abort")
    create_topic(broker, topic, 1)
    p = hand(f"tid-{topic}")
    p.txn.init_transactions(10)
    p.txn.begin_transaction()
    p.produce(topic, 0, [b"x0", b"x1"])
    p.txn.abort_transaction(10)
    assert p.txn.state is TxnState.READY
    p.txn.begin_transaction()
    p.produce(topic, 0, [b"y0"])
    p.txn.commit_transaction(10)
    assert summary(_log(broker, p, topic)) == [
        ("data", b"x0"), ("data", b"x1"), ("ABORT", None), ("data", b"y0"), ("COMMIT", None)]


def test_empty_transaction_commits_and_aborts_without_requests(mock_cluster):
    p = HandProducer(mock_cluster, f"tid-{unique_topic('empty')}")
    try:
        p.txn.init_transactions(10)
        mock_cluster.start_request_tracking()
        mock_cluster.clear_requests()
        p.txn.begin_transaction()
        p.txn.commit_transaction(10)
        p.txn.begin_transaction()
        p.txn.abort_transaction(10)
        assert p.txn.state is TxnState.READY
        keys = {r.api_key for r in mock_cluster.requests()}
        assert not keys & {ADD_PARTITIONS, ADD_OFFSETS, END_TXN}
    finally:
        mock_cluster.stop_request_tracking()
        p.close()


def test_second_producer_fences_the_first(real_broker):
    # Tansu answers a fenced producer's Produce with PRODUCER_FENCED (its EndTxn and
    # AddPartitionsToTxn close the connection instead of answering), Apache Kafka with
    # INVALID_PRODUCER_EPOCH; the mock cluster gives every InitProducerId a new producer id
    # and fences nobody.
    topic = unique_topic("txn-fence")
    create_topic(real_broker, topic, 1)
    tid = f"tid-{topic}"
    old, new = HandProducer(real_broker, tid), HandProducer(real_broker, tid)
    try:
        old.txn.init_transactions(10)
        old.txn.begin_transaction()
        old.produce(topic, 0, [b"old-0"])

        new.txn.init_transactions(10)  # fences `old` and aborts its open transaction
        old_pid, old_epoch = old.txn.producer_id_and_epoch()
        new_pid, new_epoch = new.txn.producer_id_and_epoch()
        # Tansu bumps the epoch once; Apache Kafka (transactions v2) once for the abort
        # marker and once more for the new producer.
        assert (new_pid, new_epoch) == (old_pid, old_epoch + (2 if broker_is_kafka(
            real_broker) else 1))

        code, _ = old.send_batch(topic, 0, [b"old-1"])
        assert code in (E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH)
        old.txn.batch_failed(SimpleNamespace(topic=topic, partition=0, base_sequence=1),
                             KafkaError.of(code))
        assert old.txn.state is TxnState.FATAL_ERROR
        for call in (lambda: old.txn.commit_transaction(1), old.txn.begin_transaction,
                     lambda: old.txn.abort_transaction(1), old.txn.check_produce):
            with pytest.raises(KafkaException) as info:
                call()
            err = info.value.args[0]
            assert err.code() == E.PRODUCER_FENCED  # either answer means "fenced"
            assert err.fatal() and not err.retriable() and not err.txn_requires_abort()

        new.txn.begin_transaction()
        new.produce(topic, 0, [b"new-0"])
        new.txn.commit_transaction(10)
        # The commit marker reaches the partition a moment after EndTxn answers.
        deadline = time.monotonic() + 10
        log = read_log(new.client, topic, 0)
        while len(log) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
            log = read_log(new.client, topic, 0)
        assert summary(log) == [
            ("data", b"old-0"), ("ABORT", None), ("data", b"new-0"), ("COMMIT", None)]
        assert log[2].producer_epoch == new_epoch
    finally:
        old.close()
        new.close()


def test_offsets_commit_with_the_transaction_and_not_on_abort(real_broker):
    # Only Tansu: the mock cluster acknowledges TxnOffsetCommit without storing the offsets.
    # Tansu keeps an aborted transaction's offsets and commits them with the next committed
    # transaction of the same producer (confluent-kafka's producer shows the same), so the
    # aborted transaction comes last here.
    topic, source = unique_topic("txn-out"), unique_topic("txn-in")
    create_topic(real_broker, topic, 1)
    create_topic(real_broker, source, 2)
    group = f"group-{source}"
    p = HandProducer(real_broker, f"tid-{topic}")
    try:
        p.txn.init_transactions(10)
        # Offsets alone make a transaction too.
        p.txn.begin_transaction()
        p.txn.send_offsets_to_transaction([TopicPartition(source, 1, 2)], group, 10)
        p.txn.commit_transaction(10)
        assert _committed(real_broker, group, source, 2) == [-1001, 2]

        p.txn.begin_transaction()
        p.produce(topic, 0, [b"r0"])
        p.txn.send_offsets_to_transaction(
            [TopicPartition(source, 0, 5), TopicPartition(source, 1, 3)], group, 10)
        p.txn.commit_transaction(10)
        assert _committed(real_broker, group, source, 2) == [5, 3]

        p.txn.begin_transaction()
        p.produce(topic, 0, [b"r1"])
        p.txn.send_offsets_to_transaction([TopicPartition(source, 0, 9)], group, 10)
        p.txn.abort_transaction(10)
        assert _committed(real_broker, group, source, 2) == [5, 3]
        assert summary(read_log(p.client, topic, 0)) == [
            ("data", b"r0"), ("COMMIT", None), ("data", b"r1"), ("ABORT", None)]
    finally:
        p.close()


def test_failed_produce_makes_the_transaction_abortable(fresh_mock_cluster):
    topic = unique_topic("txn-abortable")
    create_topic(fresh_mock_cluster, topic, 1)
    p = HandProducer(fresh_mock_cluster, f"tid-{topic}")
    try:
        p.txn.init_transactions(10)
        first = p.txn.producer_id_and_epoch()
        p.txn.begin_transaction()
        p.produce(topic, 0, [b"ok-0"])
        fresh_mock_cluster.push_errors(PRODUCE, [E.TOPIC_AUTHORIZATION_FAILED])
        code, _ = p.send_batch(topic, 0, [b"lost"])
        assert code == E.TOPIC_AUTHORIZATION_FAILED

        failed = SimpleNamespace(topic=topic, partition=0, base_sequence=1)
        p.txn.batch_failed(failed, KafkaError.of(code))
        assert p.txn.state is TxnState.ABORTABLE_ERROR
        for call in (lambda: p.txn.commit_transaction(5), p.txn.check_produce,
                     lambda: p.txn.send_offsets_to_transaction(
                         [TopicPartition(topic, 0, 1)], "g", 5)):
            with pytest.raises(KafkaException) as info:
                call()
            err = info.value.args[0]
            assert err.code() == E.TOPIC_AUTHORIZATION_FAILED
            assert err.txn_requires_abort() and not err.fatal() and not err.retriable()
        p.txn.abort_transaction(10)
        # The failed batch left a sequence gap: the abort bumped the epoch.
        bumped = p.txn.producer_id_and_epoch()
        assert bumped[0] == first[0] and bumped[1] == first[1] + 1
        assert p.sequences == {}
        p.txn.begin_transaction()
        p.produce(topic, 0, [b"ok-1"])
        p.txn.commit_transaction(10)
        log = read_log(p.client, topic, 0, verify_crc=False)
        assert summary(log) == [("data", b"ok-0"), ("ABORT", None), ("data", b"ok-1"),
                                ("COMMIT", None)]
        assert log[2].producer_epoch == first[1] + 1
    finally:
        p.close()


def test_injected_coordinator_errors_still_commit(fresh_mock_cluster):
    mc = fresh_mock_cluster
    topic, source = unique_topic("txn-inject"), unique_topic("txn-inject-in")
    create_topic(mc, topic, 2)
    create_topic(mc, source, 1)
    group, tid = f"group-{topic}", f"tid-{topic}"
    mc.set_coordinator("transaction", tid, 1)
    mc.set_coordinator("group", group, 3)
    p = HandProducer(mc, tid)
    try:
        transient = [E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS,
                     E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE]
        mc.start_request_tracking()
        for api in (INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN):
            mc.push_errors(api, transient)
        mc.push_errors(TXN_OFFSET_COMMIT, [E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR,
                                           E.CONCURRENT_TRANSACTIONS])
        p.txn.init_transactions(20)
        p.txn.begin_transaction()
        p.txn.maybe_add_partitions([(topic, 0), (topic, 1)]).result(20)
        p.produce(topic, 0, [b"p0"])
        p.produce(topic, 1, [b"p1"])
        p.txn.send_offsets_to_transaction([TopicPartition(source, 0, 7)], group, 20)
        p.txn.commit_transaction(20)
        assert p.txn.state is TxnState.READY

        requests = mc.requests()
        counts: dict[int, int] = {}
        for r in requests:
            counts[r.api_key] = counts.get(r.api_key, 0) + 1
        by_api = {api: {r.broker_id for r in requests if r.api_key == api}
                  for api in (INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN,
                              TXN_OFFSET_COMMIT)}
        assert by_api == {INIT_PRODUCER_ID: {1}, ADD_PARTITIONS: {1}, ADD_OFFSETS: {1},
                          END_TXN: {1}, TXN_OFFSET_COMMIT: {3}}
        for api in (INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN):
            assert counts[api] == 5, (api, counts)  # four errors, then success
        assert counts[TXN_OFFSET_COMMIT] == 4
        # NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE made the coordinator be looked up again.
        assert counts[FIND_COORDINATOR] >= 1 + 2 * 4
        for part, value in ((0, b"p0"), (1, b"p1")):
            assert summary(read_log(p.client, topic, part, verify_crc=False)) == [
                ("data", value), ("COMMIT", None)]
    finally:
        mc.stop_request_tracking()
        p.close()


def test_moved_coordinator_is_found_again(fresh_mock_cluster):
    mc = fresh_mock_cluster
    topic = unique_topic("txn-move")
    create_topic(mc, topic, 1)
    tid = f"tid-{topic}"
    mc.set_coordinator("transaction", tid, 1)
    p = HandProducer(mc, tid)
    try:
        p.txn.init_transactions(10)
        p.txn.begin_transaction()
        p.produce(topic, 0, [b"m0"])
        mc.set_coordinator("transaction", tid, 2)
        mc.start_request_tracking()
        p.txn.commit_transaction(20)
        ends = [r.broker_id for r in mc.requests() if r.api_key == END_TXN]
        assert ends[-1] == 2 and 1 in ends  # refused by the old one, done by the new one
        assert summary(read_log(p.client, topic, 0, verify_crc=False)) == [
            ("data", b"m0"), ("COMMIT", None)]
    finally:
        mc.stop_request_tracking()
        p.close()


def test_fatal_init_errors(fresh_mock_cluster):
    p = HandProducer(fresh_mock_cluster, f"tid-{unique_topic('auth')}")
    try:
        fresh_mock_cluster.push_errors(INIT_PRODUCER_ID, [E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED])
        with pytest.raises(KafkaException) as info:
            p.txn.init_transactions(10)
        err = info.value.args[0]
        assert err.code() == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and err.fatal()
        assert p.txn.state is TxnState.FATAL_ERROR
    finally:
        p.close()


def test_state_errors(mock_cluster):
    p = HandProducer(mock_cluster, f"tid-{unique_topic('state')}")
    try:
        for call in (p.txn.begin_transaction, lambda: p.txn.commit_transaction(1),
                     lambda: p.txn.abort_transaction(1), p.txn.check_produce):
            with pytest.raises(KafkaException) as info:
                call()
            assert info.value.args[0].code() == E._STATE
        p.txn.init_transactions(10)
        with pytest.raises(KafkaException) as info:
            p.txn.init_transactions(10)
        assert info.value.args[0].code() == E._STATE
        with pytest.raises(KafkaException) as info:
            p.txn.commit_transaction(1)
        assert info.value.args[0].code() == E._STATE
        p.txn.begin_transaction()
        with pytest.raises(KafkaException) as info:
            p.txn.begin_transaction()
        assert info.value.args[0].code() == E._STATE
        with pytest.raises(TypeError):
            p.txn.send_offsets_to_transaction([("t", 0, 1)], "g", 1)
        with pytest.raises(TypeError):
            p.txn.send_offsets_to_transaction([TopicPartition("t", 0, 1)], object(), 1)
        # Only negative offsets: nothing to send, nothing fails.
        p.txn.send_offsets_to_transaction([TopicPartition("t", 0, -1001)], "g", 1)
        p.txn.abort_transaction(5)
        assert p.txn.state is TxnState.READY
    finally:
        p.close()


def test_init_times_out_retriably_and_resumes(tmp_path):
    from kafka_fast.config import make_config
    from kafka_fast.net import KafkaClient
    from kafka_fast.transactions import TransactionManager

    conf = make_config({"bootstrap.servers": f"127.0.0.1:{free_port()}",
                        "transactional.id": "tid-unreachable"}, "producer")
    client = KafkaClient(conf).start()
    txn = TransactionManager(client, conf)
    try:
        for _ in range(2):
            with pytest.raises(KafkaException) as info:
                txn.init_transactions(0.5)
            err = info.value.args[0]
            assert err.code() == E._TIMED_OUT and err.retriable() and not err.fatal()
            assert "InitProducerId timed out (no coordinator found)" in err.str()
            assert txn.state is TxnState.INITIALIZING
    finally:
        client.close()
