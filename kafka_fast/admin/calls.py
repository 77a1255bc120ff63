"""One admin operation: a request per target broker, per-item results, retries.

An ``AdminCall`` owns one Future per item (topic name, ConfigResource, ...). It sends the
items to their broker (the controller, a given broker, or any), turns the response into a
result or a KafkaError per item, and retries transport errors and NOT_CONTROLLER answers
(after refreshing metadata) with backoff until its deadline. Runs on the I/O thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any

from ..errors import KafkaError, KafkaException
from ..net.backoff import Backoff
from ..net.client import KafkaClient
from ..net.request import settle_all

CONTROLLER = "controller"
ANY = "any"

_RETRY_LOCAL = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                          KafkaError._UNKNOWN_BROKER})
_REFRESH_CODES = frozenset({KafkaError.NOT_CONTROLLER})


class AdminCall:
    """``build(items) -> request``; ``parse(response) -> {item: result | KafkaError}``;
    ``target(item) -> CONTROLLER | ANY | node_id`` groups items into requests."""

    def __init__(self, client: KafkaClient, items: list[Hashable],
                 build: Callable[[list[Hashable]], Any],
                 parse: Callable[[Any], dict[Hashable, Any]],
                 target: Callable[[Hashable], Any], timeout: float) -> None:
        self.client = client
        self.build = build
        self.parse = parse
        self.target = target
        self.deadline = time.monotonic() + timeout
        self.futures: dict[Hashable, Future] = {item: Future() for item in items}
        conf = client.config
        self.backoff = Backoff(conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])

    def start(self) -> dict[Hashable, Future]:
        items = list(self.futures)
        self.client.call_soon(lambda: self._send(items))
        return dict(self.futures)

    def _node_for(self, target: Any) -> int | None:
        if target == ANY:
            return None
        if target == CONTROLLER:
            view = self.client.cluster
            cid = view.controller_id
            return cid if cid in view.brokers else None
        return int(target)

    def _send(self, items: list[Hashable]) -> None:
        groups: dict[int | None, list[Hashable]] = {}
        for item in items:
            groups.setdefault(self._node_for(self.target(item)), []).append(item)
        remaining_ms = max(1, int((self.deadline - time.monotonic()) * 1000))
        for node, group in groups.items():
            try:
                request = self.build(group)
            except (KafkaException, ValueError, TypeError) as exc:
                self._fail(group, exc if isinstance(exc, KafkaException) else KafkaException(
                    KafkaError(KafkaError._INVALID_ARG, str(exc))))
                continue
            if node is None:
                fut = self.client.send_any(request, timeout_ms=remaining_ms)
            else:
                fut = self.client.send(node, request, timeout_ms=remaining_ms)
            fut.add_done_callback(lambda f, g=group: self.client.loop.call_soon(
                lambda: self._done(g, f)))

    def _fail(self, items: list[Hashable], exc: BaseException) -> None:
        settle_all([self.futures[i] for i in items], error=exc)

    def _done(self, items: list[Hashable], fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            err = exc.args[0] if isinstance(exc, KafkaException) else None
            if err is not None and err.code() in _RETRY_LOCAL and self._retry(items, False):
                return
            self._fail(items, exc)
            return
        try:
            results = self.parse(fut.result())
        except Exception as exc:  # noqa: BLE001 - a malformed answer fails the items
            self._fail(items, KafkaException(KafkaError(KafkaError._BAD_MSG, str(exc))))
            return
        again = []
        for item in items:
            result = results.get(item, _MISSING)
            if result is _MISSING:
                result = KafkaError(KafkaError._BAD_MSG, f"the broker's answer lacks {item!r}")
            if isinstance(result, KafkaError):
                if result.code() in _REFRESH_CODES:
                    again.append(item)
                    continue
                settle_all([self.futures[item]], error=KafkaException(result))
            else:
                settle_all([self.futures[item]], result)
        if again and not self._retry(again, True):
            self._fail(again, KafkaException(KafkaError(KafkaError.NOT_CONTROLLER)))

    def _retry(self, items: list[Hashable], refresh: bool) -> bool:
        delay = self.backoff.next_delay()
        if time.monotonic() + delay >= self.deadline:
            return False
        if refresh:
            self.client.request_metadata()
        self.client.call_later(delay, lambda: self._send(items))
        return True


_MISSING = object()
