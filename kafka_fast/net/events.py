"""Events: what a connection reports to its owner, and client-level events for user threads.

``ConnectionEvents`` is what a ``BrokerConnection`` calls on its owner (the KafkaClient) when
it becomes ready, goes down, is throttled, or cannot write a request sent to any broker.

The I/O thread never calls user callbacks. It puts ``ClientEvent`` objects on
``KafkaClient.events`` (a thread-safe queue); the producer's and consumer's ``poll()`` call
``KafkaClient.serve_events()``, which pops them and calls ``error_cb`` / ``throttle_cb`` on the
calling thread, as librdkafka does. The AdminClient serves them on a thread of its own.
Statistics (``stats_cb``, every ``statistics.interval.ms``) travel the same way.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import KafkaError

if TYPE_CHECKING:
    from .connection import BrokerConnection
    from .request import Request

log = logging.getLogger("kafka_fast.net")


class ConnectionEvents(Protocol):
    """What a ``BrokerConnection`` reports to its owner, on the I/O thread."""

    def connection_ready(self, conn: BrokerConnection) -> None:
        """``conn`` finished its set-up (TLS, ApiVersions, SASL) and is READY."""

    def connection_down(self, conn: BrokerConnection, error: KafkaError | None,
                        was_ready: bool, terminal: bool) -> None:
        """``conn`` closed: ``error`` None for a quiet close (idle or shutdown); ``terminal``
        for authentication and TLS failures."""

    def throttled(self, conn: BrokerConnection, throttle_ms: int) -> None:
        """A response on ``conn`` carried a throttle time."""

    def reroute(self, req: Request, failed: BrokerConnection) -> bool:
        """``req`` (sent to any broker) could not be written on ``failed``: True if the
        owner took it to send elsewhere, False to fail it."""


@dataclass(frozen=True)
class ThrottleEvent:
    """A broker throttled this client (confluent-kafka's ThrottleEvent fields)."""

    broker_name: str
    broker_id: int
    throttle_time: float  # seconds

    def __str__(self) -> str:
        return f"{self.broker_name}/{self.broker_id} throttled for {self.throttle_time * 1000:.0f} ms"


@dataclass(frozen=True)
class ClientEvent:
    """``kind`` is "error" (``value`` a KafkaError), "throttle" (a ThrottleEvent) or
    "stats" (the statistics JSON string)."""

    kind: str
    value: Any


class EventQueue:
    """A thread-safe queue of ``ClientEvent`` plus the dispatch to user callbacks."""

    def __init__(self, error_cb: Callable[[KafkaError], object] | None = None,
                 throttle_cb: Callable[[ThrottleEvent], object] | None = None,
                 logger: logging.Logger | None = None,
                 stats_cb: Callable[[str], object] | None = None) -> None:
        #: events for the serving thread; None tells a dedicated event thread to stop
        self.queue: queue.SimpleQueue[ClientEvent | None] = queue.SimpleQueue()
        self.error_cb = error_cb
        self.throttle_cb = throttle_cb
        self.stats_cb = stats_cb
        self.log = logger or log
        #: Called (on the reporting thread) after each event is queued, so that a client
        #: waiting in ``poll()`` can wake up and serve it.
        self.listener: Callable[[], object] | None = None
        #: The first fatal error reported (the client is unusable after it).
        self.fatal: KafkaError | None = None

    def error(self, err: KafkaError) -> None:
        """Report a client-level error (logged at once; ``error_cb`` when served)."""
        self.log.warning("%s: %s", err.name(), err.str())
        if err.fatal() and self.fatal is None:
            self.fatal = err
        self.queue.put(ClientEvent("error", err))
        self._notify()

    def _notify(self) -> None:
        listener = self.listener
        if listener is not None:
            try:
                listener()
            except Exception:  # a wake-up must not fail the reporter
                self.log.exception("event listener failed")

    def throttle(self, event: ThrottleEvent) -> None:
        if self.throttle_cb is not None:
            self.queue.put(ClientEvent("throttle", event))
            self._notify()

    def stats(self, json_str: str) -> None:
        """Queue a statistics report for ``stats_cb``."""
        if self.stats_cb is not None:
            self.queue.put(ClientEvent("stats", json_str))
            self._notify()

    def serve(self, timeout: float = 0.0, max_events: int | None = None) -> int:
        """Dispatch queued events on this thread; wait up to ``timeout`` for the first one.

        Returns the number of events served. An exception raised by a callback propagates
        to the caller (as in confluent-kafka); events not yet served stay queued.
        """
        served = 0
        block = timeout > 0
        while max_events is None or served < max_events:
            try:
                event = self.queue.get(block, timeout) if block else self.queue.get_nowait()
            except queue.Empty:
                break
            block = False
            if event is None:  # the event thread's stop signal
                break
            served += 1
            self.dispatch(event)
        return served

    def dispatch(self, event: ClientEvent) -> None:
        """Call the user callback for ``event`` on this thread."""
        kind = event.kind
        cb = (self.error_cb if kind == "error" else self.throttle_cb if kind == "throttle"
              else self.stats_cb)
        if cb is not None:
            cb(event.value)
