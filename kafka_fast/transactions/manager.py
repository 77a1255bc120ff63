"""``TransactionManager``: the transactional producer's side of the transaction protocol.

It owns the producer id and epoch of a ``transactional.id``, the transaction state machine, and
every request to the transaction coordinator (and TxnOffsetCommit to the group coordinator).
The producer plugs it in through a narrow interface:

- ``ready(part)`` (I/O thread, per partition with a batch to send): True once the partition is
  part of the open transaction; the first call for a partition queues it for the next batched
  AddPartitionsToTxn (transactions v1) and the sender is woken when it is added;
- ``producer_id_and_epoch()``; ``on_new_epoch(pid, epoch)`` is called when they change (the
  producer restarts its sequence numbers);
- ``batch_failed(batch, err)``: a batch of the transaction failed -> abortable state;
- ``check_produce()`` before queueing a record: raises unless a transaction is open;
- ``flush(timeout) -> int`` and ``purge()`` callbacks given by the producer: commit flushes
  first; abort purges queued batches and waits for the ones in flight.

User-facing operations (confluent-kafka's names and error flags): ``init_transactions``,
``begin_transaction``, ``send_offsets_to_transaction``, ``commit_transaction``,
``abort_transaction``. A call that times out raises a retriable ``_TIMED_OUT`` and leaves the
state as it was, so calling the same method again resumes it.

Transactions v2 (KIP-890) are used when the coordinator negotiates EndTxn v5 and the client
speaks Produce v12 (with which the broker adds partitions to the transaction itself): no
AddPartitionsToTxn or AddOffsetsToTxn from the client, and every EndTxn answer carries the
producer epoch to use next. Otherwise transactions v1, with EndTxn capped at v4.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NamedTuple

from ..cluster.coordinators import GROUP, TRANSACTION
from ..errors import ConfigError, KafkaError, KafkaException
from ..net.request import settle_all
from ..protocol.messages import EndTxnRequest, ProduceRequest
from . import requests as rq
from .calls import CoordinatorCall
from .state import (
    FENCING_CODES,
    SENDING_STATES,
    TxnState,
    abortable_error,
    can_transition,
    fatal_error,
    retriable_error,
    state_error,
)

S = TxnState
TopicPart = tuple[str, int]
#: Extra seconds a caller waits for a call past its own deadline before giving up on it.
_GRACE = 5.0


class GroupIdentity(NamedTuple):
    """What TxnOffsetCommit needs of the consumer group (``Consumer.consumer_group_metadata()``)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


def group_identity(group_metadata: Any) -> GroupIdentity:
    """Accept a ``ConsumerGroupMetadata`` (anything with ``group_id``) or a group id string."""
    if isinstance(group_metadata, str):
        if not group_metadata:
            raise KafkaException(KafkaError.of(KafkaError._INVALID_ARG, "group id is empty"))
        return GroupIdentity(group_metadata)
    group_id = getattr(group_metadata, "group_id", None)
    if not isinstance(group_id, str) or not group_id:
        raise TypeError("group_metadata must be Consumer.consumer_group_metadata() or a group "
                        f"id string, not {type(group_metadata).__name__}")
    generation = getattr(group_metadata, "generation_id", -1)
    return GroupIdentity(group_id, -1 if generation is None else int(generation),
                         getattr(group_metadata, "member_id", "") or "",
                         getattr(group_metadata, "group_instance_id", None))


class TransactionManager:
    """Transactions for one ``transactional.id`` over a started ``KafkaClient``."""

    def __init__(self, client: Any, config: Any, *,
                 flush: Callable[[float], int] | None = None,
                 purge: Callable[[], None] | None = None) -> None:
        tid = config["transactional.id"]
        if not tid:
            raise ConfigError("transactional.id must be set to use transactions")
        self.client = client
        self.transactional_id: str = tid
        self.transaction_timeout_ms: int = config["transaction.timeout.ms"]
        self._flush = flush
        self._purge = purge
        #: Called with (producer_id, epoch) whenever they change (not under the lock).
        self.on_new_epoch: Callable[[int, int], None] = lambda pid, epoch: None
        #: Called once with the error when the manager becomes fatally failed.
        self.on_fatal: Callable[[KafkaError], None] = lambda err: None
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._api = threading.Lock()
        self._state = S.UNINITIALIZED
        self._error: KafkaError | None = None
        self._pid = -1
        self._epoch = -1
        self._tv2 = False
        self._gen = 0  # counts transactions; stale AddPartitionsToTxn answers are dropped
        self._started = False  # the coordinator knows of the open transaction
        self._bump_at_abort = False
        self._in_txn: set[TopicPart] = set()
        self._pending_add: set[TopicPart] = set()
        self._adding: set[TopicPart] = set()
        self._add_call: CoordinatorCall | None = None
        self._add_scheduled = False
        self._waiters: list[tuple[set[TopicPart], Future]] = []
        self._offset_groups: set[str] = set()

    # -- observers -----------------------------------------------------------------------------
    @property
    def state(self) -> TxnState:
        return self._state

    @property
    def transaction_version(self) -> int:
        """2 when the coordinator speaks transactions v2 (KIP-890), else 1."""
        return 2 if self._tv2 else 1

    @property
    def error(self) -> KafkaError | None:
        """The abortable or fatal error the manager is in, if any."""
        return self._error

    def producer_id_and_epoch(self) -> tuple[int, int]:
        with self._lock:
            return self._pid, self._epoch

    def partitions(self) -> set[TopicPart]:
        """Partitions added to the open transaction so far."""
        with self._lock:
            return set(self._in_txn)

    # -- producer interface --------------------------------------------------------------------
    def check_produce(self) -> None:
        """Raise unless records may be queued now (a transaction is open and healthy)."""
        state = self._state
        if state is S.IN_TRANSACTION:
            return
        if self._error is not None:
            raise KafkaException(self._error)
        raise state_error("produce", state)

    def ready(self, part: Any) -> bool:
        """May batches for ``part`` (``.topic``, ``.partition``) be sent now?"""
        tp = (part.topic, part.partition)
        with self._lock:
            if self._state not in SENDING_STATES:
                return False
            if self._tv2:
                self._started = True
                return True
            if tp in self._in_txn:
                return True
            if tp not in self._adding and tp not in self._pending_add:
                self._pending_add.add(tp)
                self._schedule_adds()
            return False

    def sending(self, part: Any) -> bool:
        """Whether batches for ``part`` may be sent now, without side effects (``ready``
        asks for the partition to be added)."""
        with self._lock:
            return self._state in SENDING_STATES and (
                self._tv2 or (part.topic, part.partition) in self._in_txn)

    def maybe_add_partitions(self, tps: Iterable[TopicPart]) -> Future:
        """A Future resolved once every ``(topic, partition)`` is in the open transaction
        (at once if they are, or with transactions v2); failed with the transaction's error."""
        fut: Future = Future()
        with self._lock:
            if self._state not in SENDING_STATES:
                fut.set_exception(self._error_now("add partitions"))
                return fut
            if self._tv2:
                self._started = True
                fut.set_result(None)
                return fut
            missing = {(tp[0], tp[1]) for tp in tps} - self._in_txn
            if not missing:
                fut.set_result(None)
                return fut
            self._pending_add |= missing - self._adding
            self._waiters.append((missing, fut))
            self._schedule_adds()
        return fut

    def batch_failed(self, batch: Any, err: KafkaError) -> None:
        """A batch (``.topic``, ``.partition``, ``.base_sequence``) of the transaction failed."""
        sequenced = getattr(batch, "base_sequence", -1) >= 0
        code = err.code()
        with self._lock:
            if sequenced or code in rq.BUMP_CODES:
                self._bump_at_abort = True
            if code in FENCING_CODES or code == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                fatal = fatal_error(code, f"producing to {batch.topic} [{batch.partition}] "
                                          f"failed: {err.str()}")
            else:
                fatal = None
                if self._state in SENDING_STATES:
                    self._to_abortable(abortable_error(code, (
                        f"producing to {batch.topic} [{batch.partition}] failed: "
                        f"{err.str()}")))
        if fatal is not None:
            self._to_fatal(fatal)

    def request_epoch_bump(self) -> None:
        """The producer lost track of its sequence numbers (e.g. the broker forgot the
        producer id): the open transaction must be aborted, and the abort bumps the epoch."""
        with self._lock:
            self._bump_at_abort = True
        # On the next loop pass, so that the failure of the batch that caused this (reported
        # right after) is the error the application sees.
        self.client.call_soon(self._bump_makes_abortable)

    def _bump_makes_abortable(self) -> None:
        with self._lock:
            if self._state in SENDING_STATES:
                self._to_abortable(abortable_error(
                    KafkaError._INCONSISTENT,
                    "the producer's sequence numbers are out of step with the broker"))

    def close(self) -> None:
        """Fail whatever waits on the manager (the producer is closing)."""
        with self._lock:
            waiters, self._waiters = self._waiters, []
            self._cond.notify_all()
        exc = KafkaException(KafkaError.of(KafkaError._DESTROY, "the producer is closed"))
        settle_all([f for _, f in waiters], error=exc)

    # -- user operations -----------------------------------------------------------------------
    def init_transactions(self, timeout: float | None = None) -> None:
        """Get the producer id and epoch for ``transactional.id`` (fencing older producers
        with the same id and completing any transaction they left open)."""
        with self._operation("init_transactions"):
            deadline = _deadline(timeout)
            with self._lock:
                self._raise_if_fatal()
                if self._state not in (S.UNINITIALIZED, S.INITIALIZING):
                    raise state_error("init_transactions", self._state)
                self._transition(S.INITIALIZING)
            self._init_producer_id(deadline, bump=False)

    def begin_transaction(self) -> None:
        with self._operation("begin_transaction"):
            with self._lock:
                self._raise_if_fatal()
                if self._state is not S.READY:
                    raise state_error("begin_transaction", self._state)
                self._reset_transaction()
                self._transition(S.IN_TRANSACTION)

    def send_offsets_to_transaction(self, offsets: Iterable[Any], group_metadata: Any,
                                    timeout: float | None = None) -> None:
        """Commit the consumer ``offsets`` (TopicPartitions holding the next offset to read)
        for the group as part of the open transaction."""
        group = group_identity(group_metadata)
        offsets = list(offsets)
        for tp in offsets:
            if not hasattr(tp, "topic") or not hasattr(tp, "offset"):
                raise TypeError("offsets must be TopicPartition objects, not "
                                f"{type(tp).__name__}")
        valid = [tp for tp in offsets if tp.offset >= 0]
        with self._operation("send_offsets_to_transaction"):
            deadline = _deadline(timeout)
            with self._lock:
                self._raise_if_fatal()
                if self._state is S.ABORTABLE_ERROR:
                    raise KafkaException(self._error)
                if self._state is not S.IN_TRANSACTION:
                    raise state_error("send_offsets_to_transaction", self._state)
                if not valid:
                    return
                pid, epoch, tv2 = self._pid, self._epoch, self._tv2
                need_add = not tv2 and group.group_id not in self._offset_groups
            tid = self.transactional_id
            if need_add:
                self._wait_call(CoordinatorCall(
                    self.client, TRANSACTION, tid, "AddOffsetsToTxn",
                    lambda: rq.add_offsets(tid, pid, epoch, group.group_id),
                    rq.handle_add_offsets, deadline))
                with self._lock:
                    self._offset_groups.add(group.group_id)
                    self._started = True
            self._wait_call(CoordinatorCall(
                self.client, GROUP, group.group_id, "TxnOffsetCommit",
                lambda: rq.txn_offset_commit(tid, pid, epoch, group, valid, tv2),
                rq.handle_txn_offset_commit, deadline))
            if tv2:
                with self._lock:
                    self._started = True

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush every queued record, then commit. If a record failed, raises an error with
        ``txn_requires_abort()``; on time-out a retriable one (call again to resume)."""
        with self._operation("commit_transaction"):
            deadline = _deadline(timeout)
            with self._lock:
                self._raise_if_fatal()
                if self._state is S.ABORTABLE_ERROR:
                    raise KafkaException(self._error)
                if self._state is S.IN_TRANSACTION:
                    self._transition(S.COMMITTING)
                elif self._state is not S.COMMITTING:
                    raise state_error("commit_transaction", self._state)
            self._drain(deadline, "commit_transaction")
            self._wait_adds(deadline, "commit_transaction")
            self._end(True, deadline)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Fail the queued records (_PURGE_QUEUE), wait for those in flight, then abort."""
        with self._operation("abort_transaction"):
            deadline = _deadline(timeout)
            with self._lock:
                self._raise_if_fatal()
                if self._state in (S.IN_TRANSACTION, S.ABORTABLE_ERROR):
                    self._transition(S.ABORTING)
                    self._pending_add.clear()
                    waiters, self._waiters = self._waiters, []
                elif self._state is S.ABORTING:
                    waiters = []
                else:
                    raise state_error("abort_transaction", self._state)
            settle_all([f for _, f in waiters], error=KafkaException(KafkaError.of(
                KafkaError._PURGE_QUEUE, "the transaction is being aborted")))
            if self._purge is not None:
                self._purge()
            self._drain(deadline, "abort_transaction")
            self._wait_adds(deadline, "abort_transaction")
            self._end(False, deadline)

    # -- steps ---------------------------------------------------------------------------------
    def _init_producer_id(self, deadline: float, *, bump: bool) -> None:
        tid = self.transactional_id
        with self._lock:
            pid, epoch = (self._pid, self._epoch) if bump else (-1, -1)
        nodes: list[int] = []

        def handle(resp: Any, node: int) -> Any:
            nodes.append(node)
            return rq.handle_init_producer_id(resp, node)

        new_pid, new_epoch = self._wait_call(CoordinatorCall(
            self.client, TRANSACTION, tid, "InitProducerId",
            lambda: rq.init_producer_id(tid, self.transaction_timeout_ms, pid, epoch),
            handle, deadline))
        version = self.client.api_version(nodes[-1], EndTxnRequest.API_KEY) or 0
        with self._lock:
            self._pid, self._epoch = new_pid, new_epoch
            self._tv2 = (version >= rq.END_TXN_V2_MIN_VERSION
                         and ProduceRequest.MAX_VERSION >= rq.PRODUCE_TXN_V2_MIN_VERSION)
            self._bump_at_abort = False
            self._reset_transaction()
            self._transition(S.READY)
        self.on_new_epoch(new_pid, new_epoch)

    def _end(self, commit: bool, deadline: float) -> None:
        """EndTxn (when the coordinator knows of the transaction), then READY."""
        what = "commit_transaction" if commit else "abort_transaction"
        with self._lock:
            started, pid, epoch, tv2 = self._started, self._pid, self._epoch, self._tv2
            bump = not commit and self._bump_at_abort and not tv2
        if started:
            tid = self.transactional_id
            new_pid, new_epoch = self._wait_call(CoordinatorCall(
                self.client, TRANSACTION, tid, "EndTxn",
                lambda: rq.end_txn(tid, pid, epoch, commit, tv2), rq.handle_end_txn, deadline))
            with self._lock:
                self._started = False  # a resumed call must not end it twice
                changed = new_pid >= 0 and (new_pid, new_epoch) != (pid, epoch)
                if changed:
                    self._pid, self._epoch = new_pid, new_epoch
            if changed:
                self.on_new_epoch(new_pid, new_epoch)
        if bump:
            # A sequence gap was left in some partition: a new epoch restarts the sequences.
            self._init_producer_id(deadline, bump=True)
            return
        with self._lock:
            if self._state not in (S.COMMITTING, S.ABORTING):
                raise state_error(what, self._state)
            self._reset_transaction()
            self._transition(S.READY)

    def _drain(self, deadline: float, what: str) -> None:
        """Wait until the producer holds no record (flush callback), or fail the call."""
        if self._flush is None:
            return
        while True:
            left = deadline - time.monotonic()
            remaining = self._flush(max(0.0, min(0.1, left)))
            with self._lock:
                if self._state is S.FATAL_ERROR or (
                        what == "commit_transaction" and self._state is S.ABORTABLE_ERROR):
                    raise KafkaException(self._error)
            if not remaining:
                return
            if time.monotonic() >= deadline:
                raise KafkaException(retriable_error(
                    KafkaError._TIMED_OUT,
                    f"{what} timed out: {remaining} records not delivered yet"))

    def _wait_adds(self, deadline: float, what: str) -> None:
        """Wait for an AddPartitionsToTxn in flight to settle."""
        with self._lock:
            while self._add_call is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise KafkaException(retriable_error(
                        KafkaError._TIMED_OUT, f"{what} timed out adding partitions"))
                self._cond.wait(min(left, 1.0))
            if self._state is S.FATAL_ERROR or (
                    what == "commit_transaction" and self._state is S.ABORTABLE_ERROR):
                raise KafkaException(self._error)

    def _wait_call(self, call: CoordinatorCall) -> Any:
        """Run ``call`` and wait for it; errors move the state machine and are raised."""
        fut = call.start()
        wait = None if call.deadline == float("inf") else max(
            0.0, call.deadline - time.monotonic()) + _GRACE
        try:
            return fut.result(wait)
        except FutureTimeout:
            raise KafkaException(retriable_error(
                KafkaError._TIMED_OUT, f"{call.what} timed out")) from None
        except KafkaException as exc:
            err = exc.args[0]
            if err.fatal():
                self._to_fatal(err)
            elif err.txn_requires_abort():
                with self._lock:
                    self._to_abortable(err)
            raise

    # -- AddPartitionsToTxn batching (I/O thread) -----------------------------------------------
    def _schedule_adds(self) -> None:
        """Lock held: send the pending partitions on the next I/O-loop pass."""
        if self._add_call is None and not self._add_scheduled:
            self._add_scheduled = True
            self.client.call_soon(self._send_adds)

    def _send_adds(self) -> None:
        with self._lock:
            self._add_scheduled = False
            if self._add_call is not None or not self._pending_add:
                return
            if self._state not in SENDING_STATES:
                self._pending_add.clear()
                return
            tps, self._pending_add = self._pending_add, set()
            self._adding = tps
            tid, pid, epoch, gen = self.transactional_id, self._pid, self._epoch, self._gen
            call = CoordinatorCall(
                self.client, TRANSACTION, tid, "AddPartitionsToTxn",
                lambda: rq.add_partitions(tid, pid, epoch, tps), rq.handle_add_partitions,
                time.monotonic() + self.transaction_timeout_ms / 1000.0)
            self._add_call = call
        call.start().add_done_callback(lambda f: self._adds_done(f, gen))

    def _adds_done(self, fut: Future, gen: int) -> None:
        fatal = None
        failed: list[Future] = []
        done: list[Future] = []
        with self._lock:
            self._add_call = None
            adding, self._adding = self._adding, set()
            exc = fut.exception()
            if gen != self._gen:
                pass  # the transaction ended meanwhile
            elif exc is not None:
                err = exc.args[0] if isinstance(exc, KafkaException) else KafkaError.of(
                    KafkaError._FAIL, str(exc))
                if err.fatal():
                    fatal = err
                else:
                    if not err.txn_requires_abort():
                        err = abortable_error(err.code(), err.str())
                    self._to_abortable(err)
                failed = [f for _, f in self._waiters]
                self._waiters = []
            else:
                added = fut.result()
                self._in_txn |= added
                self._started = True
                self._pending_add |= adding - added
                keep: list[tuple[set[TopicPart], Future]] = []
                for want, f in self._waiters:
                    if want <= self._in_txn:
                        done.append(f)
                    else:
                        keep.append((want, f))
                self._waiters = keep
                if self._pending_add:
                    self._schedule_adds()
            self._cond.notify_all()
        if fatal is not None:
            self._to_fatal(fatal)
        elif failed:
            settle_all(failed, error=KafkaException(self._error))
        settle_all(done, None)
        self.client.wakeup()

    # -- state ---------------------------------------------------------------------------------
    def _transition(self, dst: TxnState) -> None:
        """Lock held."""
        if not can_transition(self._state, dst):
            raise KafkaException(KafkaError.of(
                KafkaError._STATE,
                f"invalid transaction state transition {self._state.value} -> {dst.value}"))
        self._state = dst
        if dst is S.READY:
            self._error = None
        self._cond.notify_all()

    def _to_abortable(self, err: KafkaError) -> None:
        """Lock held: the open transaction can only be aborted now."""
        if self._state in (S.IN_TRANSACTION, S.COMMITTING, S.ABORTABLE_ERROR):
            if self._state is not S.ABORTABLE_ERROR:
                self._error = err
            self._state = S.ABORTABLE_ERROR
            self._cond.notify_all()

    def _to_fatal(self, err: KafkaError) -> None:
        with self._lock:
            if self._state is S.FATAL_ERROR:
                return
            self._state = S.FATAL_ERROR
            self._error = err
            waiters, self._waiters = self._waiters, []
            self._pending_add.clear()
            self._cond.notify_all()
        settle_all([f for _, f in waiters], error=KafkaException(err))
        self.on_fatal(err)
        self.client.wakeup()

    def _raise_if_fatal(self) -> None:
        if self._state is S.FATAL_ERROR:
            raise KafkaException(self._error)

    def _error_now(self, what: str) -> KafkaException:
        if self._error is not None:
            return KafkaException(self._error)
        return state_error(what, self._state)

    def _reset_transaction(self) -> None:
        """Lock held: forget the partitions and groups of the previous transaction."""
        self._gen += 1
        self._started = False
        self._in_txn.clear()
        self._pending_add.clear()
        self._offset_groups.clear()

    def _operation(self, name: str) -> _Operation:
        return _Operation(self._api, name)


class _Operation:
    """One user operation at a time (librdkafka answers a concurrent call with _CONFLICT)."""

    __slots__ = ("lock", "name")

    def __init__(self, lock: threading.Lock, name: str) -> None:
        self.lock = lock
        self.name = name

    def __enter__(self) -> None:
        if not self.lock.acquire(blocking=False):
            raise KafkaException(KafkaError.of(
                KafkaError._CONFLICT,
                f"{self.name}: another transactional operation is in progress"))

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def _deadline(timeout: float | None) -> float:
    """None or a negative timeout waits without limit (as confluent-kafka's -1 does)."""
    if timeout is None or timeout < 0:
        return float("inf")
    return time.monotonic() + float(timeout)
