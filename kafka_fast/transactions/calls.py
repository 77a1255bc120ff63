"""One request to a coordinator, retried until it succeeds, fails for good, or its deadline.

A ``CoordinatorCall`` runs on the client's I/O thread: it looks the coordinator up (cached by
the client), sends the request, and lets the caller's ``handle(response)`` classify the answer:

- ``Outcome.done(value)``: resolve the call's Future with ``value``;
- ``Outcome.retry(err)``: send again after a short exponential backoff (CONCURRENT_TRANSACTIONS,
  COORDINATOR_LOAD_IN_PROGRESS: the coordinator is kept);
- ``Outcome.rediscover(err)``: forget the coordinator, look it up again, then send again
  (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, and a lost connection);
- ``Outcome.fail(err)``: fail the Future with ``KafkaException(err)``.

Every wait is bounded by the deadline; when it passes, the Future fails with a retriable
``_TIMED_OUT`` naming the last error seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, NamedTuple

from ..errors import KafkaError, KafkaException
from ..net.lanes import Lane
from ..net.request import settle_all
from ..shared.backoff import Backoff
from .state import abortable_error, fatal_error, retriable_error

#: First and largest delay between retries of a transactional request (milliseconds).
RETRY_BACKOFF_MS = 20.0
RETRY_BACKOFF_MAX_MS = 1000.0

_TRANSIENT_LOCAL = frozenset({
    KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._UNKNOWN_BROKER,
    KafkaError._ALL_BROKERS_DOWN, KafkaError.REQUEST_TIMED_OUT, KafkaError.NETWORK_EXCEPTION,
    KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
})


def _lookup_error(err: KafkaError) -> KafkaError:
    """A failed coordinator lookup as the Java client and librdkafka classify it: a group
    the user may not describe spoils only the open transaction (abortable); a transactional
    id the user may not describe is fatal."""
    reason = f"finding the coordinator failed: {err.str()}"
    if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
        return abortable_error(err.code(), reason)
    if err.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        return fatal_error(err.code(), reason)
    return err


class Outcome(NamedTuple):
    action: str  # "done" | "retry" | "rediscover" | "fail"
    value: Any = None
    error: KafkaError | None = None

    @staticmethod
    def done(value: Any = None) -> Outcome:
        return Outcome("done", value)

    @staticmethod
    def retry(error: KafkaError) -> Outcome:
        return Outcome("retry", None, error)

    @staticmethod
    def rediscover(error: KafkaError) -> Outcome:
        return Outcome("rediscover", None, error)

    @staticmethod
    def fail(error: KafkaError) -> Outcome:
        return Outcome("fail", None, error)


class CoordinatorCall:
    """Send ``build()`` to the coordinator of ``(key_type, key)`` until ``handle`` settles it.

    ``build`` is called for every attempt (so it sees the current producer id and epoch) and
    may return a message or a ``VersionedRequest``. ``future`` resolves with the ``done`` value.
    """

    def __init__(self, client: Any, key_type: int, key: str, what: str,
                 build: Callable[[], Any], handle: Callable[[Any, int], Outcome],
                 deadline: float) -> None:
        self.client = client
        self.key_type = key_type
        self.key = key
        self.what = what
        self.build = build
        self.handle = handle
        self.deadline = deadline
        self.future: Future = Future()
        self.backoff = Backoff(RETRY_BACKOFF_MS, RETRY_BACKOFF_MAX_MS)
        self.last_error: KafkaError | None = None
        self.attempts = 0

    def start(self) -> Future:
        """Begin (from any thread); returns ``self.future``."""
        self.client.call_soon(self._lookup)
        if self.deadline != float("inf"):
            # A coordinator lookup or a request may outlive the deadline: end the call then.
            timer = self.client.call_later(self.deadline - time.monotonic(), self._expire)
            self.future.add_done_callback(lambda f: timer.cancel())
        return self.future

    def _expire(self) -> None:
        if not self.future.done():
            self._timed_out()

    # -- I/O thread --------------------------------------------------------------------------
    def _lookup(self) -> None:
        if self.future.done():
            return
        if time.monotonic() >= self.deadline:
            self._timed_out()
            return
        try:
            fut = self.client.coordinator(self.key_type, self.key)
        except KafkaException as exc:
            self._settle(Outcome.fail(exc.args[0]))
            return
        fut.add_done_callback(self._found)

    def _found(self, fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            err = _error_of(exc)
            if err.code() in _TRANSIENT_LOCAL or err.retriable():
                self._again(err, rediscover=False)
            else:
                self._settle(Outcome.fail(_lookup_error(err)))
            return
        node = fut.result()
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            self._timed_out()
            return
        timeout_ms = None
        if remaining < self.client.settings.request_timeout:
            timeout_ms = max(1, int(remaining * 1000))
        self.attempts += 1
        try:
            sent = self.client.send(node, self.build(), timeout_ms=timeout_ms,
                                    lane=Lane.COORDINATOR)
        except KafkaException as failure:
            self._settle(Outcome.fail(failure.error))
            return
        sent.add_done_callback(lambda f: self._answered(f, node))

    def _answered(self, fut: Future, node: int) -> None:
        if self.future.done():
            return
        exc = fut.exception()
        if exc is not None:
            err = _error_of(exc)
            if err.code() in _TRANSIENT_LOCAL:
                self._again(err, rediscover=True)
            else:
                self._settle(Outcome.fail(err))
            return
        try:
            outcome = self.handle(fut.result(), node)
        except KafkaException as failure:
            outcome = Outcome.fail(failure.error)
        self._settle(outcome)

    def _settle(self, outcome: Outcome) -> None:
        action = outcome.action
        if action == "done":
            settle_all([self.future], outcome.value)
        elif action == "retry":
            self._again(outcome.error, rediscover=False)
        elif action == "rediscover":
            self._again(outcome.error, rediscover=True)
        else:
            settle_all([self.future], error=KafkaException(outcome.error))

    def _again(self, err: KafkaError | None, *, rediscover: bool) -> None:
        self.last_error = err
        if rediscover:
            self.client.invalidate_coordinator(self.key_type, self.key)
        delay = self.backoff.next_delay()
        if time.monotonic() + delay >= self.deadline:
            self._timed_out()
            return
        self.client.call_later(delay, self._lookup)

    def _timed_out(self) -> None:
        last = self.last_error
        if last is not None:
            detail = f" (last error: {last.name()}: {last.str()})"
        elif self.attempts == 0:
            detail = " (no coordinator found)"
        else:
            detail = ""
        settle_all([self.future], error=KafkaException(retriable_error(
            KafkaError._TIMED_OUT, f"{self.what} timed out{detail}")))


def _error_of(exc: BaseException) -> KafkaError:
    if isinstance(exc, KafkaException):
        return exc.args[0]
    return KafkaError.of(KafkaError._FAIL, f"{type(exc).__name__}: {exc}")
