"""Transactions ended by another client than the producer that wrote them.

A producer can *prepare* its open transaction (flush it and hand out its transactional id,
producer id and epoch) instead of committing it; any client may then send the EndTxn that
commits or aborts it, as long as no producer has re-initialised the transactional id in
between (that aborts the transaction). This is how a Spark driver commits what its tasks
wrote (Flink's Kafka sink does the same). The transaction must be ended within
``transaction.timeout.ms`` of its first record, or the coordinator aborts it.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from ..cluster.coordinators import TRANSACTION
from . import requests as rq
from .calls import CoordinatorCall


class PreparedTransaction(NamedTuple):
    """An open, flushed transaction: what EndTxn needs to end it."""

    transactional_id: str
    producer_id: int
    epoch: int
    tv2: bool


def end_prepared(client: Any, prepared: PreparedTransaction, commit: bool,
                 timeout: float | None = None) -> None:
    """Commit (or abort) ``prepared`` through ``client``; raises ``KafkaException`` if the
    coordinator refuses (e.g. the transactional id was fenced, or it ended already)."""
    deadline = float("inf") if timeout is None or timeout < 0 else time.monotonic() + timeout
    tid, pid, epoch, tv2 = prepared
    call = CoordinatorCall(client, TRANSACTION, tid, "EndTxn",
                           lambda: rq.end_txn(tid, pid, epoch, commit, tv2),
                           rq.handle_end_txn, deadline)
    call.start().result()
