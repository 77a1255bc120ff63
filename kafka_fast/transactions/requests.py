"""The transactional requests and how each answer is classified.

Error handling follows the Java client's transaction handlers (and librdkafka's): coordinator
moves are re-discovered, CONCURRENT_TRANSACTIONS / COORDINATOR_LOAD_IN_PROGRESS are retried
after a backoff, fencing and authorization failures are fatal, errors that only spoil the
current transaction make it abortable, and anything unexpected is fatal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import KafkaError
from ..net.request import VersionedRequest
from ..protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    EndTxnRequest,
    InitProducerIdRequest,
    TxnOffsetCommitRequest,
)
from .calls import Outcome
from .state import FENCING_CODES, abortable_error, fatal_error

E = KafkaError

#: Versions 4+ of AddPartitionsToTxn are for brokers talking to brokers.
ADD_PARTITIONS_CLIENT_MAX_VERSION = 3
#: First EndTxn version of transactions v2 (KIP-890 part 2: a new epoch after every end).
END_TXN_V2_MIN_VERSION = 5
#: First Produce version of transactions v2: the broker adds the partition to the
#: transaction itself. Older Produce versions need AddPartitionsToTxn first (v1).
PRODUCE_TXN_V2_MIN_VERSION = 12
#: First TxnOffsetCommit version of transactions v2: the broker adds the group to the
#: transaction itself (no AddOffsetsToTxn).
TXN_OFFSET_COMMIT_V2_MIN_VERSION = 5
#: First InitProducerId version that takes the current producer id and epoch (KIP-360).
INIT_BUMP_MIN_VERSION = 3

_REDISCOVER = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
_RETRY = frozenset({E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS})
_FATAL = FENCING_CODES | {E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                          E.CLUSTER_AUTHORIZATION_FAILED}
#: Errors that spoil the open transaction only (abort it, then carry on).
_ABORTABLE = frozenset({E.TRANSACTION_ABORTABLE, E.UNKNOWN_PRODUCER_ID,
                        E.INVALID_PRODUCER_ID_MAPPING})
#: Abortable errors after which the abort must also bump the producer epoch.
BUMP_CODES = frozenset({E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING,
                        E.OUT_OF_ORDER_SEQUENCE_NUMBER})


def classify(code: int, what: str, *, abortable: Iterable[int] = (),
             retry: Iterable[int] = (), rediscover: Iterable[int] = ()) -> Outcome | None:
    """The outcome of a non-zero error ``code`` (None for 0)."""
    if code == 0:
        return None
    reason = f"{what} failed: {E.of(code).str()}"
    if code in _REDISCOVER or code in rediscover:
        return Outcome.rediscover(E.of(code, reason))
    if code in _RETRY or code in retry:
        return Outcome.retry(E.of(code, reason))
    if code in _FATAL:
        return Outcome.fail(fatal_error(code, reason))
    if code in _ABORTABLE or code in abortable:
        return Outcome.fail(abortable_error(code, reason))
    return Outcome.fail(fatal_error(code, f"{reason} (unexpected error)"))


# -- InitProducerId ----------------------------------------------------------------------------
def init_producer_id(transactional_id: str, timeout_ms: int, producer_id: int,
                     epoch: int) -> VersionedRequest:
    """InitProducerId; ``producer_id``/``epoch`` >= 0 ask for a bump of that identity."""

    def build(version: int) -> InitProducerIdRequest:
        bump = version >= INIT_BUMP_MIN_VERSION and producer_id >= 0
        return InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=timeout_ms,
            producer_id=producer_id if bump else -1, producer_epoch=epoch if bump else -1)

    return VersionedRequest(InitProducerIdRequest, build)


def handle_init_producer_id(resp: Any, node: int) -> Outcome:
    out = classify(resp.error_code, "InitProducerId")
    return out or Outcome.done((resp.producer_id, resp.producer_epoch))


# -- AddPartitionsToTxn (transactions v1) -------------------------------------------------------
def add_partitions(transactional_id: str, producer_id: int, epoch: int,
                   partitions: Iterable[tuple[str, int]]) -> VersionedRequest:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    topic_cls = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic

    def build(version: int) -> AddPartitionsToTxnRequest:
        return AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()])

    return VersionedRequest(AddPartitionsToTxnRequest, build,
                            max_version=ADD_PARTITIONS_CLIENT_MAX_VERSION)


def handle_add_partitions(resp: Any, node: int) -> Outcome:
    """Done with the set of (topic, partition) added, or the worst per-partition outcome."""
    added: set[tuple[str, int]] = set()
    outcomes: list[Outcome] = []
    for t in resp.results_by_topic_v3_and_below or ():
        for p in t.results_by_partition:
            code = p.partition_error_code
            if code == 0:
                added.add((t.name, p.partition_index))
            elif code != E.OPERATION_NOT_ATTEMPTED:  # set when another partition failed
                outcomes.append(failure(
                    code, f"AddPartitionsToTxn for {t.name} [{p.partition_index}]",
                    abortable=(E.TOPIC_AUTHORIZATION_FAILED,),
                    retry=(E.UNKNOWN_TOPIC_OR_PARTITION,)))
    if not outcomes:
        code = getattr(resp, "error_code", 0)
        if not added and code:
            return failure(code, "AddPartitionsToTxn")
        return Outcome.done(added)
    return _worst(outcomes)


# -- AddOffsetsToTxn (transactions v1) and TxnOffsetCommit ---------------------------------------
def add_offsets(transactional_id: str, producer_id: int, epoch: int,
                group_id: str) -> AddOffsetsToTxnRequest:
    return AddOffsetsToTxnRequest(transactional_id=transactional_id, producer_id=producer_id,
                                  producer_epoch=epoch, group_id=group_id)


def handle_add_offsets(resp: Any, node: int) -> Outcome:
    out = classify(resp.error_code, "AddOffsetsToTxn",
                   abortable=(E.GROUP_AUTHORIZATION_FAILED,))
    return out or Outcome.done(None)


def txn_offset_commit(transactional_id: str, producer_id: int, epoch: int, group: Any,
                      offsets: list[Any], tv2: bool = True) -> VersionedRequest:
    """``group``: ``GroupIdentity``; ``offsets``: TopicPartitions with the next offsets.
    Without ``tv2`` at most the last version of transactions v1 (v5 would add the group to
    a transactions-v2 transaction)."""
    topic_cls = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    part_cls = topic_cls.TxnOffsetCommitRequestPartition
    by_topic: dict[str, list[Any]] = {}
    for tp in offsets:
        epoch_hint = tp.leader_epoch if tp.leader_epoch is not None else -1
        by_topic.setdefault(tp.topic, []).append(part_cls(
            partition_index=tp.partition, committed_offset=tp.offset,
            committed_leader_epoch=epoch_hint, committed_metadata=tp.metadata))
    request = TxnOffsetCommitRequest(
        transactional_id=transactional_id, group_id=group.group_id, producer_id=producer_id,
        producer_epoch=epoch, generation_id_or_member_epoch=group.generation_id,
        member_id=group.member_id, group_instance_id=group.group_instance_id,
        topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()])
    return VersionedRequest(TxnOffsetCommitRequest, lambda _v: request,
                            None if tv2 else TXN_OFFSET_COMMIT_V2_MIN_VERSION - 1)


def handle_txn_offset_commit(resp: Any, node: int) -> Outcome:
    outcomes: list[Outcome] = []
    for t in resp.topics:
        for p in t.partitions:
            if p.error_code:
                outcomes.append(failure(
                    p.error_code, f"TxnOffsetCommit for {t.name} [{p.partition_index}]",
                    abortable=(E.GROUP_AUTHORIZATION_FAILED, E.UNKNOWN_MEMBER_ID,
                               E.ILLEGAL_GENERATION, E.FENCED_INSTANCE_ID,
                               E.REBALANCE_IN_PROGRESS),
                    retry=(E.UNKNOWN_TOPIC_OR_PARTITION,),
                    rediscover=(E.REQUEST_TIMED_OUT,)))
    return _worst(outcomes) if outcomes else Outcome.done(None)


# -- EndTxn ------------------------------------------------------------------------------------
def end_txn(transactional_id: str, producer_id: int, epoch: int, committed: bool,
            tv2: bool = True) -> VersionedRequest:
    """EndTxn; without ``tv2`` at most the last version of transactions v1 (a v5 EndTxn
    would end the transaction the v2 way)."""

    def build(version: int) -> EndTxnRequest:
        return EndTxnRequest(transactional_id=transactional_id, producer_id=producer_id,
                             producer_epoch=epoch, committed=committed)

    return VersionedRequest(EndTxnRequest, build,
                            None if tv2 else END_TXN_V2_MIN_VERSION - 1)


def handle_end_txn(resp: Any, node: int) -> Outcome:
    """Done with the (producer id, epoch) a v5+ answer carries, else (-1, -1)."""
    out = classify(resp.error_code, "EndTxn")
    if out is not None:
        return out
    return Outcome.done((getattr(resp, "producer_id", -1), getattr(resp, "producer_epoch", -1)))


_SEVERITY = {"fail": 3, "rediscover": 2, "retry": 1, "done": 0}


def failure(code: int, what: str, *, abortable: Iterable[int] = (),
            retry: Iterable[int] = (), rediscover: Iterable[int] = ()) -> Outcome:
    """``classify`` for a code known to be non-zero."""
    outcome = classify(code, what, abortable=abortable, retry=retry, rediscover=rediscover)
    assert outcome is not None, "failure() needs a non-zero error code"
    return outcome


def _worst(outcomes: list[Outcome]) -> Outcome:
    """Fatal before abortable before re-discovery before a plain retry."""

    def rank(o: Outcome) -> tuple[int, int]:
        fatal = 1 if o.error is not None and o.error.fatal() else 0
        return _SEVERITY[o.action], fatal

    return max(outcomes, key=rank)
