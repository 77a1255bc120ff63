"""Producer identity for idempotence: the producer id and epoch from InitProducerId, and the
epoch bump (KIP-360) that resets every partition's sequence numbers.

Runs on the I/O thread. A transactional producer reuses this state with its own coordinator
lookup (``transactional_id`` set, the request sent to the transaction coordinator).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from ..errors import KafkaError, KafkaException
from ..protocol.messages import InitProducerIdRequest
from ..shared.backoff import Backoff

INIT_PRODUCER_ID_KEY = InitProducerIdRequest.API_KEY
#: First InitProducerId version that can bump the epoch of an existing producer id.
BUMP_MIN_VERSION = 3


class ProducerIdentity:
    """Producer id/epoch and the InitProducerId exchange that (re)initialises them.

    States: ``need_init`` (no id yet, or a bump is due once nothing is in flight),
    ``initializing`` (request outstanding), ``ready``, ``fatal``.
    """

    def __init__(self, client: Any, config: Any, *,
                 send: Callable[[Any], Future] | None = None) -> None:
        self.client = client
        self.transactional_id: str | None = config["transactional.id"] or None
        self.transaction_timeout_ms = config["transaction.timeout.ms"]
        self.producer_id = -1
        self.epoch = -1
        self.state = "need_init"
        self.bump_requested = False
        self.fatal_error: KafkaError | None = None
        self.retry_at = 0.0
        self.backoff = Backoff(config["retry.backoff.ms"], config["retry.backoff.max.ms"])
        self._send = send or client.send_any
        self.on_new_epoch: Callable[[], None] = lambda: None
        #: A transactional producer's TransactionManager: it gets the id and epoch from the
        #: transaction coordinator (``adopt``) and is told of bump requests.
        self.manager: Any = None

    @property
    def ready(self) -> bool:
        return self.state == "ready"

    def adopt(self, producer_id: int, epoch: int) -> None:
        """Use an id and epoch the transaction manager obtained (I/O thread)."""
        self.producer_id = producer_id
        self.epoch = epoch
        self.bump_requested = False
        self.state = "ready"
        self.on_new_epoch()

    def request_bump(self) -> None:
        """Ask for a new epoch, or a new producer id without a transactional id (sequences
        restart at 0), once nothing is in flight."""
        if self.manager is not None:
            self.manager.request_epoch_bump()
            return
        if self.state in ("ready", "need_init"):
            self.bump_requested = True
            self.state = "need_init"

    def maybe_send(self, now: float, inflight: int) -> None:
        """Send InitProducerId when one is due (a bump waits for in-flight requests)."""
        if self.state != "need_init" or now < self.retry_at or self.manager is not None:
            return
        if self.bump_requested and inflight:
            return
        # Only a transactional id keeps its producer id across a bump (KIP-360); an
        # idempotent producer takes a fresh id, which restarts every sequence at 0 as well.
        bump = self.bump_requested and self.producer_id >= 0 and self.transactional_id is not None
        req = InitProducerIdRequest(
            transactional_id=self.transactional_id,
            transaction_timeout_ms=self.transaction_timeout_ms,
            producer_id=self.producer_id if bump else -1,
            producer_epoch=self.epoch if bump else -1,
        )
        self.state = "initializing"
        try:
            fut = self._send(req)
        except KafkaException as exc:
            self._failed(exc.args[0])
            return
        fut.add_done_callback(lambda f: self.client.call_soon(lambda: self._done(f, bump)))

    def _done(self, fut: Future, bump: bool) -> None:
        if self.state != "initializing":
            return
        exc = fut.exception()
        if exc is not None:
            err = exc.args[0] if isinstance(exc, KafkaException) else KafkaError.of(
                KafkaError._FAIL, str(exc))
            self._failed(err)
            return
        resp = fut.result()
        code = resp.error_code
        if code:
            if bump and code in (KafkaError.UNSUPPORTED_VERSION, KafkaError.INVALID_REQUEST):
                # Broker without KIP-360 bumps: start over with a new producer id.
                self.producer_id = -1
            self._failed(KafkaError.of(code))
            return
        self.producer_id = resp.producer_id
        self.epoch = resp.producer_epoch
        self.bump_requested = False
        self.state = "ready"
        self.backoff.reset()
        self.on_new_epoch()

    def _failed(self, err: KafkaError) -> None:
        code = err.code()
        transport = code in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
                             KafkaError._ALL_BROKERS_DOWN, KafkaError._UNKNOWN_BROKER,
                             KafkaError._DESTROY)
        if code == KafkaError._DESTROY:
            self.state = "fatal"
            self.fatal_error = err
            return
        if err.retriable() or transport or code in (
                KafkaError.UNSUPPORTED_VERSION, KafkaError.INVALID_REQUEST):
            self.state = "need_init"
            self.retry_at = time.monotonic() + self.backoff.next_delay()
            if code in (KafkaError.UNSUPPORTED_VERSION, KafkaError.INVALID_REQUEST):
                self.bump_requested = False
                self.producer_id = -1
            return
        self.state = "fatal"
        self.fatal_error = KafkaError.of(code, f"InitProducerId failed: {err.str()}", fatal=True)
