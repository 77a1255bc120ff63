"""Group and transaction coordinators: FindCoordinator lookups with a cache.

Lookups made in the same I/O-loop iteration are sent together: one batched request
(``coordinator_keys``, FindCoordinator v4+) per key type when the chosen broker supports it,
else one request per key. COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR /
COORDINATOR_LOAD_IN_PROGRESS answers are retried with backoff until ``request.timeout.ms``.

Callers using a coordinator follow ``coordinator_action(code)``: "rediscover" ->
``invalidate_coordinator`` then look it up again; "backoff" -> retry the same coordinator
after a backoff (COORDINATOR_LOAD_IN_PROGRESS never triggers a new lookup).
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from functools import partial
from typing import TYPE_CHECKING

from ..errors import KafkaError, KafkaException
from ..protocol.messages import FindCoordinatorRequest
from ..protocol.versioned import VersionedRequest
from ..shared.backoff import Backoff
from ..shared.futures import settle_all
from .link import ClusterLink

if TYPE_CHECKING:
    from ..config import Config

GROUP = 0
TRANSACTION = 1

_RETRIABLE = frozenset({KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR,
                        KafkaError.COORDINATOR_LOAD_IN_PROGRESS})
_REDISCOVER = frozenset({KafkaError.COORDINATOR_NOT_AVAILABLE, KafkaError.NOT_COORDINATOR})


def coordinator_action(code: int) -> str | None:
    """What to do after a coordinator request answered ``code``.

    "rediscover" (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE): invalidate and look up again;
    "backoff" (COORDINATOR_LOAD_IN_PROGRESS): keep the coordinator, retry after a backoff;
    None: not a coordinator error.
    """
    if code in _REDISCOVER:
        return "rediscover"
    if code == KafkaError.COORDINATOR_LOAD_IN_PROGRESS:
        return "backoff"
    return None


def _find_coordinator(key_type: int, keys: list[str]) -> VersionedRequest:
    """FindCoordinator for ``keys``: batched from v4, one key (``keys[0]``) before."""

    def build(version: int) -> FindCoordinatorRequest:
        if version >= 4:
            return FindCoordinatorRequest(key_type=key_type, coordinator_keys=list(keys))
        return FindCoordinatorRequest(key=keys[0], key_type=key_type)

    return VersionedRequest(FindCoordinatorRequest, build)


class _Lookup:
    __slots__ = ("futures", "deadline", "backoff", "due", "busy")

    def __init__(self, deadline: float, backoff: Backoff) -> None:
        self.futures: list[Future] = []
        self.deadline = deadline
        self.backoff = backoff
        self.due = 0.0
        self.busy = False


class CoordinatorCache:
    """Coordinator lookups for ``link``; ``conf`` is the client's ``Config``."""

    def __init__(self, link: ClusterLink, conf: Config) -> None:
        self.link = link
        self.timeout = conf["request.timeout.ms"] / 1000.0
        self._backoff_ms = (conf["retry.backoff.ms"], conf["retry.backoff.max.ms"])
        self.cache: dict[tuple[int, str], int] = {}
        self._lookups: dict[tuple[int, str], _Lookup] = {}
        self._flush_scheduled = False

    def lookup(self, key_type: int, key: str) -> Future:
        """Thread-safe: a Future of the coordinator's node id."""
        k = (int(key_type), str(key))
        node = self.cache.get(k)
        fut: Future = Future()
        if node is not None:
            fut.set_result(node)
            return fut
        self.link.loop.call_soon(lambda: self._add(k, fut))
        self.link.ensure_started()
        return fut

    def invalidate(self, key_type: int, key: str) -> None:
        self.cache.pop((int(key_type), str(key)), None)

    def fail_all(self, exc: BaseException) -> None:
        """Fail every waiting lookup (client shutdown)."""
        lookups, self._lookups = self._lookups, {}
        for lk in lookups.values():
            settle_all(lk.futures, error=exc)

    # -- I/O thread -------------------------------------------------------------------------
    def _add(self, k: tuple[int, str], fut: Future) -> None:
        node = self.cache.get(k)
        if node is not None:
            settle_all([fut], node)
            return
        lk = self._lookups.get(k)
        if lk is None:
            lk = self._lookups[k] = _Lookup(time.monotonic() + self.timeout,
                                             Backoff(*self._backoff_ms))
        lk.futures.append(fut)
        self._schedule_flush(0.0)

    def _schedule_flush(self, delay: float) -> None:
        if delay <= 0.0:
            if not self._flush_scheduled:
                self._flush_scheduled = True
                self.link.loop.call_soon(self._flush)
        else:
            self.link.loop.call_later(delay, lambda: self._schedule_flush(0.0))

    def _flush(self) -> None:
        self._flush_scheduled = False
        now = time.monotonic()
        by_type: dict[int, list[str]] = {}
        for (key_type, key), lk in self._lookups.items():
            if not lk.busy and lk.due <= now:
                by_type.setdefault(key_type, []).append(key)
        if not by_type:
            return
        link = self.link
        node = link.pick_node(set())
        if node is None:
            err = KafkaException(KafkaError.of(KafkaError._TRANSPORT, "no broker to ask"))
            for key_type, keys in by_type.items():
                for key in keys:
                    self._retry_or_fail((key_type, key), err)
            return
        batched = (link.api_version(node, FindCoordinatorRequest.API_KEY) or 0) >= 4
        for key_type, keys in by_type.items():
            groups = [keys] if batched else [[key] for key in keys]
            for group in groups:
                for key in group:
                    self._lookups[(key_type, key)].busy = True
                fut = link.send(node, _find_coordinator(key_type, group))
                fut.add_done_callback(partial(self._answered, key_type, group))

    def _answered(self, key_type: int, keys: list[str], fut: Future) -> None:
        """Handle the answer on the loop (a done-callback may run on another thread)."""
        self.link.loop.call_soon(lambda: self._on_done(key_type, keys, fut))

    def _on_done(self, key_type: int, keys: list[str], fut: Future) -> None:
        exc = fut.exception()
        if exc is not None:
            for key in keys:
                self._retry_or_fail((key_type, key), exc)
            return
        resp = fut.result()
        if resp.coordinators:
            results = {c.key: c for c in resp.coordinators}
            for key in keys:
                c = results.get(key)
                if c is None:
                    self._retry_or_fail((key_type, key), KafkaException(KafkaError.of(
                        KafkaError._BAD_MSG, f"FindCoordinator reply lacks key {key!r}")))
                else:
                    self._result((key_type, key), c.error_code, c.node_id, c.host, c.port,
                                 c.error_message)
        else:  # v0-3 answer one key: look the others up again
            self._result((key_type, keys[0]), resp.error_code, resp.node_id, resp.host,
                         resp.port, getattr(resp, "error_message", None))
            for key in keys[1:]:
                lk = self._lookups.get((key_type, key))
                if lk is not None:
                    lk.busy = False
            if len(keys) > 1:
                self._schedule_flush(0.0)

    def _result(self, k: tuple[int, str], code: int, node: int, host: str, port: int,
                message: str | None) -> None:
        if code == 0 and node >= 0:
            self.link.learn_broker(node, host, port)
            self.cache[k] = node
            lk = self._lookups.pop(k, None)
            if lk is not None:
                settle_all(lk.futures, node)
            return
        err = KafkaError.of(code or KafkaError.COORDINATOR_NOT_AVAILABLE, message or None)
        self._retry_or_fail(k, KafkaException(err))

    def _retry_or_fail(self, k: tuple[int, str], exc: BaseException) -> None:
        lk = self._lookups.get(k)
        if lk is None:
            return
        lk.busy = False
        err = exc.args[0] if isinstance(exc, KafkaException) else None
        # _BAD_MSG: librdkafka's mock cluster answers errors with a null host, which the
        # schema does not allow; such a reply is asked again like the error it carries.
        retriable = err is not None and (
            err.code() in _RETRIABLE or err.code() in (KafkaError._TRANSPORT,
                                                        KafkaError._TIMED_OUT,
                                                        KafkaError._BAD_MSG))
        delay = lk.backoff.next_delay()
        if retriable and time.monotonic() + delay < lk.deadline:
            lk.due = time.monotonic() + delay
            self._schedule_flush(delay)
            return
        del self._lookups[k]
        settle_all(lk.futures, error=exc)
