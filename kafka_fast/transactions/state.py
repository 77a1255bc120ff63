"""Transaction states, the transitions between them, and the errors each API call raises.

The states and transitions follow the Java client's ``TransactionManager``; the errors carry
confluent-kafka's flags: ``fatal()`` (the producer is unusable), ``txn_requires_abort()``
(call ``abort_transaction()`` and start over) and ``retriable()`` (call the same method again).
"""

from __future__ import annotations

import enum

from ..errors import KafkaError, KafkaException


class TxnState(enum.Enum):
    UNINITIALIZED = "Uninitialized"
    INITIALIZING = "Initializing"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    COMMITTING = "Committing"
    ABORTING = "Aborting"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


S = TxnState

#: Allowed transitions (FATAL_ERROR is reachable from everywhere and left never).
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    S.UNINITIALIZED: frozenset({S.INITIALIZING}),
    S.INITIALIZING: frozenset({S.INITIALIZING, S.READY}),
    S.READY: frozenset({S.IN_TRANSACTION, S.INITIALIZING}),
    S.IN_TRANSACTION: frozenset({S.COMMITTING, S.ABORTING, S.ABORTABLE_ERROR}),
    S.COMMITTING: frozenset({S.READY, S.ABORTABLE_ERROR}),
    S.ABORTING: frozenset({S.READY, S.INITIALIZING}),
    S.ABORTABLE_ERROR: frozenset({S.ABORTING, S.ABORTABLE_ERROR}),
    S.FATAL_ERROR: frozenset(),
}

#: States in which batches of the open transaction may be sent.
SENDING_STATES = frozenset({S.IN_TRANSACTION, S.COMMITTING})

#: Broker errors that mean another producer took over the transactional id.
FENCING_CODES = frozenset({KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH})


def can_transition(src: TxnState, dst: TxnState) -> bool:
    return dst is S.FATAL_ERROR or dst in TRANSITIONS[src]


def fatal_error(code: int, reason: str) -> KafkaError:
    """A fatal error; fencing codes are reported as PRODUCER_FENCED (as librdkafka does)."""
    if code in FENCING_CODES:
        code = KafkaError.PRODUCER_FENCED
        reason = f"{reason} (fenced by a newer producer with the same transactional.id)"
    return KafkaError.of(code, reason, fatal=True, retriable=False)


def abortable_error(code: int, reason: str) -> KafkaError:
    return KafkaError.of(code, reason, retriable=False, txn_requires_abort=True)


def retriable_error(code: int, reason: str) -> KafkaError:
    return KafkaError.of(code, reason, retriable=True)


def state_error(operation: str, state: TxnState) -> KafkaException:
    return KafkaException(KafkaError.of(
        KafkaError._STATE, f"{operation}: operation not valid in state {state.value}",
        retriable=False))
