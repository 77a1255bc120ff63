"""Client-level events (errors, throttling) handed from the I/O thread to user threads.

The I/O thread never calls user callbacks. It puts ``ClientEvent`` objects on
``KafkaClient.events`` (a thread-safe queue); the producer's and consumer's ``poll()`` call
``KafkaClient.serve_events()``, which pops them and calls ``error_cb`` / ``throttle_cb`` on the
calling thread, as librdkafka does. The AdminClient serves them on a thread of its own.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import KafkaError

log = logging.getLogger("kafka_fast.net")


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
    """``kind`` is "error" (``value`` a KafkaError) or "throttle" (a ThrottleEvent)."""

    kind: str
    value: Any


class EventQueue:
    """A thread-safe queue of ``ClientEvent`` plus the dispatch to user callbacks."""

    def __init__(self, error_cb: Callable[[KafkaError], object] | None = None,
                 throttle_cb: Callable[[ThrottleEvent], object] | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.queue: queue.SimpleQueue[ClientEvent] = queue.SimpleQueue()
        self.error_cb = error_cb
        self.throttle_cb = throttle_cb
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
            served += 1
            self._dispatch(event)
        return served

    def _dispatch(self, event: ClientEvent) -> None:
        cb = self.error_cb if event.kind == "error" else self.throttle_cb
        if cb is not None:
            cb(event.value)
