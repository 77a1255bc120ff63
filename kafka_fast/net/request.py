"""One request on its way to a broker, and how its Future is settled."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from typing import Any

from ..errors import KafkaError, KafkaException
from ..protocol.versioned import VersionedRequest
from ..shared.futures import settle_all

__all__ = ["FramedRequest", "ReportingFuture", "Request", "VersionedRequest", "kafka_exception",
           "settle_all"]


class FramedRequest:
    """A request that lays out its own frame and reads its own response (a hot request whose
    framing and parsing are compiled), instead of going through the generated codec.

    It names its API like a message class does (``API_KEY``, ``NAME``, ``MIN_VERSION``,
    ``MAX_VERSION``; the connection negotiates the version with them).
    """

    __slots__ = ()
    API_KEY: int
    NAME: str
    MIN_VERSION: int
    MAX_VERSION: int

    def frame(self, version: int, correlation_id: int, client_id: str | None,
              nogil_bytes: int) -> list:
        """The whole frame (int32 size, header, body) as chunks for ``sendmsg``. Byte work of
        at least ``nogil_bytes`` (if >= 0) may run without the interpreter lock."""
        raise NotImplementedError

    def decode_response(self, body: Any, version: int, nogil_bytes: int) -> Any:
        """The response read from ``body`` (after the response header; valid only during the
        call); raises like the generated decoders on malformed bytes."""
        raise NotImplementedError


class ReportingFuture(Future):
    """A Future whose done-callbacks run guarded: an exception one raises (on the I/O thread,
    where responses settle Futures) is logged and handed to ``on_error`` instead of only
    being logged by ``concurrent.futures``."""

    def __init__(self, on_error: Callable[[BaseException], object],
                 log: logging.Logger) -> None:
        super().__init__()
        self._on_error = on_error
        self._log = log
        #: the broker the request went to, and the API version it was sent with
        self.node_id: int | None = None
        self.api_version: int | None = None

    def add_done_callback(self, fn: Callable[[Future], object]) -> None:
        on_error, log = self._on_error, self._log

        def guarded(fut: Future) -> None:
            try:
                fn(fut)
            except Exception as exc:  # reported below
                log.exception("error in a response callback %r", fn)
                on_error(exc)

        super().add_done_callback(guarded)


class Request:
    """A request plus its routing, deadline and completion.

    Internal requests (connection set-up) have a ``handler(request, body_or_error)`` instead
    of a Future; it receives the raw response body (a memoryview valid during the call).
    """

    __slots__ = ("message", "api_key", "version", "future", "deadline", "expect_response",
                 "node_id", "any_node", "tried", "handler", "attempt", "lane", "sent_at",
                 "decoder")

    def __init__(self, message: Any, version: int | None, future: ReportingFuture | None,
                 deadline: float, node_id: int | None = None, any_node: bool = False,
                 handler: Callable[[Request, Any], None] | None = None,
                 lane: int = 0) -> None:
        self.message = message
        self.api_key: int = message.API_KEY
        self.version = version
        self.future = future
        self.deadline = deadline
        # Produce with acks=0 gets no response: it is complete once written.
        self.expect_response = not (self.api_key == 0 and getattr(message, "acks", -1) == 0)
        self.node_id = node_id
        self.any_node = any_node
        self.tried: set[int] | None = None
        self.handler = handler
        self.attempt = 0
        self.lane = lane  # a kafka_fast.net.lanes.Lane: the connection to the node it uses
        self.sent_at = 0.0  # monotonic time it was queued for writing (round-trip times)
        #: the message's own ``decode_response(body, version, nogil_bytes)`` (a FramedRequest,
        #: or a VersionedRequest given one); None: the generated response decoder
        self.decoder: Callable[[Any, int, int], Any] | None = getattr(
            message, "decode_response", None)

    def start(self) -> bool:
        """Mark the Future running; False if the caller cancelled it meanwhile."""
        fut = self.future
        return fut is None or fut.set_running_or_notify_cancel()

    def resolve(self, result: Any) -> None:
        fut = self.future
        if fut is not None:
            try:
                fut.set_result(result)
            except InvalidStateError:
                pass

    def fail(self, error: BaseException) -> None:
        if self.handler is not None:
            self.handler(self, error)
            return
        fut = self.future
        if fut is not None:
            try:
                fut.set_exception(error)
            except InvalidStateError:
                pass


def kafka_exception(code: int, reason: str, retriable: bool | None = None) -> KafkaException:
    """A KafkaException carrying ``KafkaError.of(code, reason)``."""
    return KafkaException(KafkaError.of(code, reason, retriable=retriable))
