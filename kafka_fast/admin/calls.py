"""Admin operations as requests: per-item futures, routing, retries and a deadline.

``AdminCall`` owns one Future per item (topic name, ConfigResource, TopicPartition, ...).
It groups the items by target broker (the controller, a given broker, any broker, or a
partition's leader from fresh metadata), turns each answer into a result or a KafkaError
per item, and retries transport errors and the answers in ``refresh_codes`` (after a
metadata refresh) with backoff. ``coordinator_call`` sends one request to a group's
coordinator, following it when it moves. Every future is settled by the deadline at the
latest (``_TIMED_OUT``). All of this runs on the client's I/O thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from ..cluster.coordinators import GROUP, coordinator_action
from ..errors import KafkaError, KafkaException
from ..net.client import KafkaClient
from ..net.request import settle_all
from ..shared.backoff import Backoff

CONTROLLER = "controller"
ANY = "any"

_RETRY_LOCAL = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                          KafkaError._UNKNOWN_BROKER})
#: Answers about a partition's leadership: refresh metadata, then ask the new leader.
LEADER_CODES = frozenset({KafkaError.NOT_LEADER_OR_FOLLOWER, KafkaError.LEADER_NOT_AVAILABLE,
                          KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH,
                          KafkaError.NOT_CONTROLLER})


def error_of(code: int, message: str | None = None) -> KafkaError | None:
    """None for 0, else the KafkaError (with the broker's message when it sent one)."""
    return KafkaError.of(code, message or None) if code else None


def exception_error(exc: BaseException) -> KafkaError:
    """The KafkaError a failed request's exception carries."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return KafkaError.of(KafkaError._FAIL, str(exc))


#: An item of an ``AdminCall``: a topic name, ConfigResource, TopicPartition, ...
K = TypeVar("K", bound=Hashable)


class AdminCall(Generic[K]):
    """``build(items) -> request``; ``parse(response, items) -> {item: result | KafkaError}``
    (``items`` as given to ``build``, for answers in request order);
    ``target(item) -> CONTROLLER | ANY | node_id | KafkaError`` (the item fails at once).

    With ``topics``, metadata for them is fetched before the first send and after each
    answer in ``refresh_codes``, so ``target`` can read leaders from ``client.cluster``.
    """

    def __init__(self, client: KafkaClient, items: list[K],
                 build: Callable[[list[K]], Any],
                 parse: Callable[[Any, list[K]], Mapping[K, Any]],
                 target: Callable[[K], Any], timeout: float, *,
                 topics: list[str] | None = None,
                 refresh_codes: frozenset[int] = frozenset({KafkaError.NOT_CONTROLLER})
                 ) -> None:
        self.client = client
        self.build = build
        self.parse = parse
        self.target = target
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.topics = topics
        self.refresh_codes = refresh_codes
        self.futures: dict[K, Future] = {item: Future() for item in items}
        conf = client.config
        self.backoff = Backoff(conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])

    def start(self) -> dict[K, Future]:
        items = list(self.futures)
        if items:
            self.client.call_soon(lambda: self._guarded(self._begin, items))
        return dict(self.futures)

    def _guarded(self, step: Callable[[list[K]], None], items: list[K]) -> None:
        """Run one step on the I/O thread; if it raises (the client closed under it, a
        bug), its items fail with that error instead of waiting for the deadline."""
        try:
            step(items)
        except KafkaException as exc:
            self._fail(items, exc)
        except Exception as exc:  # reported on the items it concerns
            self._fail(items, KafkaException(KafkaError.of(KafkaError._FAIL, repr(exc))))

    def _begin(self, items: list[K]) -> None:
        self.client.call_later(self.timeout, self._expire)
        if self.topics is not None:
            self._after_metadata(items)
        else:
            self._send(items)

    def _expire(self) -> None:
        self._fail(list(self.futures), KafkaException(KafkaError.of(
            KafkaError._TIMED_OUT, f"no answer within {self.timeout:g}s")))

    def _after_metadata(self, items: list[K]) -> None:
        fut = self.client.request_metadata(self.topics)

        def ready(f: Future) -> None:
            exc = f.exception()
            if exc is None:
                self._guarded(self._send, items)
            elif not self._retry(items, False):
                self._fail(items, exc)

        fut.add_done_callback(lambda f: self.client.loop.call_soon(lambda: ready(f)))

    def _node_for(self, target: Any) -> int | None:
        if target == ANY:
            return None
        if target == CONTROLLER:
            view = self.client.cluster
            cid = view.controller_id
            return cid if cid in view.brokers else None
        return int(target)

    def _send(self, items: list[K]) -> None:
        groups: dict[int | None, list[K]] = {}
        for item in items:
            if self.futures[item].done():
                continue
            where = self.target(item)
            if isinstance(where, KafkaError):
                settle_all([self.futures[item]], error=KafkaException(where))
                continue
            groups.setdefault(self._node_for(where), []).append(item)
        remaining_ms = max(1, int((self.deadline - time.monotonic()) * 1000))
        for node, group in groups.items():
            try:
                request = self.build(group)
            except (KafkaException, ValueError, TypeError) as exc:
                self._fail(group, exc if isinstance(exc, KafkaException) else KafkaException(
                    KafkaError.of(KafkaError._INVALID_ARG, str(exc))))
                continue
            if node is None:
                fut = self.client.send_any(request, timeout_ms=remaining_ms)
            else:
                fut = self.client.send(node, request, timeout_ms=remaining_ms)
            fut.add_done_callback(self._answered(group))

    def _answered(self, group: list[K]) -> Callable[[Future], None]:
        """The done-callback of ``group``'s request: handles the answer on the I/O thread."""
        def answered(f: Future) -> None:
            self.client.loop.call_soon(
                lambda: self._guarded(lambda items: self._done(items, f), group))
        return answered

    def _fail(self, items: list[K], exc: BaseException) -> None:
        settle_all([self.futures[i] for i in items], error=exc)

    def _done(self, items: list[K], fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            if exception_error(exc).code() in _RETRY_LOCAL and self._retry(items, False):
                return
            self._fail(items, exc)
            return
        try:
            results = self.parse(fut.result(), items)
        except Exception as exc:  # a malformed answer fails the items
            self._fail(items, KafkaException(KafkaError.of(KafkaError._BAD_MSG, str(exc))))
            return
        again = []
        for item in items:
            result = results.get(item, _MISSING)
            if result is _MISSING:
                result = KafkaError.of(KafkaError._BAD_MSG, f"the broker's answer lacks {item!r}")
            if isinstance(result, KafkaError):
                if result.code() in self.refresh_codes:
                    again.append(item)
                    continue
                settle_all([self.futures[item]], error=KafkaException(result))
            else:
                settle_all([self.futures[item]], result)
        if again and not self._retry(again, True):
            self._fail(again, KafkaException(KafkaError.of(
                results[again[0]].code(), f"still {results[again[0]].name()} at the deadline")))

    def _retry(self, items: list[K], refresh: bool) -> bool:
        delay = self.backoff.next_delay()
        if time.monotonic() + delay >= self.deadline:
            return False
        if refresh and self.topics is not None:
            self.client.call_later(delay, lambda: self._guarded(self._after_metadata, items))
            return True
        if refresh:
            self.client.request_metadata()
        self.client.call_later(delay, lambda: self._guarded(self._send, items))
        return True


_MISSING = object()


def coordinator_call(client: KafkaClient, group_id: str, make: Callable[[], Any],
                     parse: Callable[[Any, int], Any], timeout: float) -> Future:
    """Send ``make()`` to ``group_id``'s coordinator; a Future of ``parse(response, node)``.

    ``parse`` returns the result or a KafkaError; coordinator errors (NOT_COORDINATOR,
    COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) and transport errors are
    retried with backoff until ``timeout`` seconds have passed, others fail the Future.
    """
    out: Future = Future()
    deadline = time.monotonic() + timeout
    conf = client.config
    backoff = Backoff(conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])

    def retry_or_fail(err: KafkaError) -> None:
        delay = backoff.next_delay()
        action = coordinator_action(err.code())
        if (action is not None or err.code() in _RETRY_LOCAL) and \
                time.monotonic() + delay < deadline:
            if action == "rediscover" or err.code() in _RETRY_LOCAL:
                client.invalidate_coordinator(GROUP, group_id)
            client.call_later(delay, attempt)
        else:
            settle_all([out], error=KafkaException(err))

    def answered(node: int, fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            retry_or_fail(exception_error(exc))
            return
        try:
            result = parse(fut.result(), node)
        except Exception as exc:  # a malformed answer fails the call
            settle_all([out], error=KafkaException(KafkaError.of(KafkaError._BAD_MSG, str(exc))))
            return
        if isinstance(result, KafkaError):
            retry_or_fail(result)
        else:
            settle_all([out], result)

    def send(coord: Future) -> None:
        exc = coord.exception()
        if exc is not None:
            retry_or_fail(exception_error(exc))
            return
        node = coord.result()
        ms = max(1, int((deadline - time.monotonic()) * 1000))
        client.send(node, make(), timeout_ms=ms).add_done_callback(
            lambda f: client.loop.call_soon(lambda: answered(node, f)))

    def attempt() -> None:
        if not out.done():
            client.coordinator(GROUP, group_id).add_done_callback(
                lambda f: client.loop.call_soon(lambda: send(f)))

    def expire() -> None:
        settle_all([out], error=KafkaException(KafkaError.of(
            KafkaError._TIMED_OUT, f"group {group_id}: no answer within {timeout:g}s")))

    client.call_soon(attempt)
    client.call_later(timeout, expire)
    return out
