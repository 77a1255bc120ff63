"""How a ``Producer`` with ``transactional.id`` is tied to its ``TransactionManager``.

Uses these parts of the producer: its client, ``flush``/``purge``/``len``, and the sender's
transactional hooks: ``txn_hook`` (``ready(ps)`` gates a partition's batches,
``batch_failed(batch, err)`` reports failures), ``transactional`` (batches are written with the
transactional flag), ``identity.manager``/``identity.adopt`` (the manager owns the producer id
and epoch; the sender's sequence numbers restart on every new epoch) and ``set_fatal``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import KafkaError, KafkaException
from .manager import TransactionManager

if TYPE_CHECKING:
    from ..config.table import Config
    from ..net import KafkaClient
    from ..producer.sender import Sender

#: Longest wait for the I/O thread to take a new producer id and epoch (seconds).
ADOPT_TIMEOUT = 10.0


def link_producer(client: KafkaClient, sender: Sender, config: Config,
                  flush: Callable[[float], int], purge: Callable[[], None],
                  held: Callable[[], int]) -> TransactionManager:
    """Create the producer's TransactionManager and plug it into the sender.

    ``flush(timeout)`` and ``purge()`` (queued records only) are the producer's, ``held()``
    the number of records it holds.
    """
    identity = sender.identity
    if identity is None:
        raise KafkaException(KafkaError.of(
            KafkaError._INVALID_ARG, "transactional.id requires enable.idempotence=true"))

    def flush_all(timeout: float) -> int:
        try:
            return flush(timeout)
        except KafkaException:
            # Failed records were reported; the transaction's own error says what to do.
            return held()

    txn = TransactionManager(client, config, flush=flush_all, purge=purge)

    def new_epoch(pid: int, epoch: int) -> None:
        _on_io_thread(client, lambda: identity.adopt(pid, epoch))

    def fatal(err: KafkaError) -> None:
        client.call_soon(lambda: sender.set_fatal(err))

    txn.on_new_epoch = new_epoch
    txn.on_fatal = fatal
    identity.manager = txn
    sender.txn_hook = txn
    sender.transactional = True
    return txn


def _on_io_thread(client: Any, fn: Any) -> None:
    """Run ``fn`` on the client's I/O thread and wait for it."""
    if client.loop.in_loop_thread():
        fn()
        return
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        finally:
            done.set()

    client.call_soon(run)
    if not done.wait(ADOPT_TIMEOUT):
        raise KafkaException(KafkaError.of(
            KafkaError._TIMED_OUT, "the producer's network thread did not take the new "
            "producer epoch"))
