"""Transactional requests and the classification of their answers, on codec-built bytes.

The answers a peer cannot be made to give (EndTxn v5 with a new epoch: neither Tansu nor the
mock cluster speaks transactions v2; mixed per-partition errors) are encoded with the protocol
codec at the version the client negotiates and decoded back, as a broker's would be."""

from __future__ import annotations

import pytest

from kafka_fast import TopicPartition
from kafka_fast.errors import KafkaError
from kafka_fast.protocol.messages import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafka_fast.transactions import GroupIdentity, group_identity
from kafka_fast.transactions import requests as rq

E = KafkaError


def _wire(resp, version):
    return type(resp).decode(resp.encode(version), version)


def test_end_txn_v5_answer_carries_the_next_epoch():
    assert EndTxnRequest.MAX_VERSION >= rq.END_TXN_V2_MIN_VERSION
    v5 = _wire(EndTxnResponse(error_code=0, producer_id=4242, producer_epoch=8), 5)
    assert rq.handle_end_txn(v5, 1) == ("done", (4242, 8), None)
    v3 = _wire(EndTxnResponse(error_code=0), 3)
    assert rq.handle_end_txn(v3, 1) == ("done", (-1, -1), None)


def _add_response(codes: dict[tuple[str, int], int]):
    res = AddPartitionsToTxnResponse
    topics: dict[str, list] = {}
    for (topic, partition), code in codes.items():
        topics.setdefault(topic, []).append(res.AddPartitionsToTxnPartitionResult(
            partition_index=partition, partition_error_code=code))
    resp = res(results_by_topic_v3_and_below=[
        res.AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps)
        for t, ps in topics.items()])
    return _wire(resp, 3)


def test_add_partitions_answers():
    ok = rq.handle_add_partitions(_add_response({("a", 0): 0, ("a", 1): 0, ("b", 0): 0}), 1)
    assert ok.action == "done" and ok.value == {("a", 0), ("a", 1), ("b", 0)}

    retry = rq.handle_add_partitions(_add_response({
        ("a", 0): E.OPERATION_NOT_ATTEMPTED, ("a", 1): E.CONCURRENT_TRANSACTIONS}), 1)
    assert retry.action == "retry" and retry.error.code() == E.CONCURRENT_TRANSACTIONS

    moved = rq.handle_add_partitions(_add_response({
        ("a", 0): E.NOT_COORDINATOR, ("a", 1): E.COORDINATOR_LOAD_IN_PROGRESS}), 1)
    assert moved.action == "rediscover" and moved.error.code() == E.NOT_COORDINATOR

    denied = rq.handle_add_partitions(_add_response({
        ("a", 0): E.OPERATION_NOT_ATTEMPTED, ("b", 0): E.TOPIC_AUTHORIZATION_FAILED,
        ("b", 1): E.CONCURRENT_TRANSACTIONS}), 1)
    assert denied.action == "fail"
    assert denied.error.code() == E.TOPIC_AUTHORIZATION_FAILED
    assert denied.error.txn_requires_abort() and not denied.error.fatal()
    assert "b [0]" in denied.error.str()

    fenced = rq.handle_add_partitions(_add_response({
        ("a", 0): E.TOPIC_AUTHORIZATION_FAILED, ("a", 1): E.INVALID_PRODUCER_EPOCH}), 1)
    assert fenced.action == "fail" and fenced.error.fatal()
    assert fenced.error.code() == E.PRODUCER_FENCED


@pytest.mark.parametrize(("code", "action", "flag"), [
    (E.NOT_COORDINATOR, "rediscover", None),
    (E.COORDINATOR_NOT_AVAILABLE, "rediscover", None),
    (E.COORDINATOR_LOAD_IN_PROGRESS, "retry", None),
    (E.CONCURRENT_TRANSACTIONS, "retry", None),
    (E.PRODUCER_FENCED, "fail", "fatal"),
    (E.INVALID_PRODUCER_EPOCH, "fail", "fatal"),
    (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "fail", "fatal"),
    (E.CLUSTER_AUTHORIZATION_FAILED, "fail", "fatal"),
    (E.UNKNOWN_PRODUCER_ID, "fail", "abort"),
    (E.INVALID_PRODUCER_ID_MAPPING, "fail", "abort"),
    (E.TRANSACTION_ABORTABLE, "fail", "abort"),
    (E.INVALID_TXN_STATE, "fail", "fatal"),
])
def test_classify(code, action, flag):
    out = rq.classify(code, "EndTxn")
    assert out.action == action
    if flag == "fatal":
        assert out.error.fatal() and not out.error.txn_requires_abort()
        expected = E.PRODUCER_FENCED if code == E.INVALID_PRODUCER_EPOCH else code
        assert out.error.code() == expected
    elif flag == "abort":
        assert out.error.txn_requires_abort() and not out.error.fatal()
    assert rq.classify(0, "EndTxn") is None


def test_txn_offset_commit_answers():
    res = TxnOffsetCommitResponse
    part = res.TxnOffsetCommitResponseTopic.TxnOffsetCommitResponsePartition

    def answer(codes):
        return _wire(res(topics=[res.TxnOffsetCommitResponseTopic(
            name="in", partitions=[part(partition_index=i, error_code=c)
                                   for i, c in enumerate(codes)])]), 3)

    assert rq.handle_txn_offset_commit(answer([0, 0]), 3).action == "done"
    assert rq.handle_txn_offset_commit(answer([0, E.REQUEST_TIMED_OUT]), 3).action == \
        "rediscover"
    gone = rq.handle_txn_offset_commit(answer([E.ILLEGAL_GENERATION, 0]), 3)
    assert gone.action == "fail" and gone.error.txn_requires_abort()
    fenced = rq.handle_txn_offset_commit(answer([E.PRODUCER_FENCED, 0]), 3)
    assert fenced.action == "fail" and fenced.error.fatal()


def test_request_encoding():
    add = rq.add_partitions("tid", 7, 2, [("b", 1), ("a", 3), ("a", 0)])
    assert add.MAX_VERSION == 3
    msg = add.build(3)
    wire = AddPartitionsToTxnRequest.decode(msg.encode(3), 3)
    assert (wire.v3_and_below_transactional_id, wire.v3_and_below_producer_id,
            wire.v3_and_below_producer_epoch) == ("tid", 7, 2)
    assert [(t.name, t.partitions) for t in wire.v3_and_below_topics] == [
        ("a", [0, 3]), ("b", [1])]

    init = rq.init_producer_id("tid", 30000, 7, 2)
    old = InitProducerIdRequest.decode(init.build(2).encode(2), 2)
    assert (old.transactional_id, old.transaction_timeout_ms) == ("tid", 30000)
    bump = InitProducerIdRequest.decode(init.build(3).encode(3), 3)
    assert (bump.producer_id, bump.producer_epoch) == (7, 2)
    fresh = rq.init_producer_id("tid", 30000, -1, -1).build(4)
    assert (fresh.producer_id, fresh.producer_epoch) == (-1, -1)

    group = GroupIdentity("g", 5, "member-1", "static-1")
    commit = rq.txn_offset_commit("tid", 7, 2, group, [
        TopicPartition("in", 0, 10), TopicPartition("in", 1, 20, leader_epoch=4),
        TopicPartition("other", 0, 1, metadata="m")])
    assert (commit.MAX_VERSION, rq.txn_offset_commit("tid", 7, 2, group, [], False).MAX_VERSION
            ) == (5, 4)  # v5 only in a transactions-v2 transaction
    wire = TxnOffsetCommitRequest.decode(commit.build(3).encode(3), 3)
    assert (wire.group_id, wire.generation_id_or_member_epoch, wire.member_id,
            wire.group_instance_id) == ("g", 5, "member-1", "static-1")
    assert [(t.name, [(p.partition_index, p.committed_offset, p.committed_leader_epoch,
                       p.committed_metadata) for p in t.partitions]) for t in wire.topics] == [
        ("in", [(0, 10, -1, None), (1, 20, 4, None)]), ("other", [(0, 1, -1, "m")])]


def test_group_identity():
    class Meta:
        group_id, generation_id, member_id, group_instance_id = "g", 3, "m", None

    assert group_identity(Meta()) == GroupIdentity("g", 3, "m", None)
    assert group_identity("plain") == GroupIdentity("plain", -1, "", None)
    with pytest.raises(TypeError):
        group_identity(42)
