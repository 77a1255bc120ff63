"""The serializer entries of a serializing client's configuration.

``key.serializer`` / ``value.serializer`` (and the deserializer pair) hold ready-made
callables, which stay the application's; ``<name>.builder`` entries hold builders
(``SerializerBuilder`` / ``DeserializerBuilder``) that make them when the client is created,
take what they need from the configuration and are owned by the client: closed by its
``close()``. A serde with ``set_cluster_id_resolver`` is given a function returning the
cluster id (one broker look-up at a time, shared by every thread that asks).

The asyncio clients read the same entries (``start_async_client``): there a builder's
``build()`` and a serde's ``aclose()`` or ``close()`` may return an awaitable, which is
awaited, and a serde with ``set_async_cluster_id_resolver`` is given a coroutine function
returning the cluster id (one look-up at a time, shared by every task that awaits it).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import ConfigError

log = logging.getLogger("kafka_fast.serialization")

#: seconds a serde waits for the cluster id (the Java client's default max.block.ms)
CLUSTER_ID_TIMEOUT = 60.0


async def maybe_await(result: Any) -> Any:
    """``result``, awaited first if it is awaitable (an asyncio serde's or builder's call)."""
    if inspect.isawaitable(result):
        return await result
    return result


class _Entry(NamedTuple):
    """One serde entry of the configuration: ``name`` or ``name.builder``."""

    name: str
    is_key: bool
    ready: Any
    builder: Any


@dataclass
class Serdes:
    """The key and value serdes of a client, and those it built (and so closes)."""

    key: Any = None
    value: Any = None
    owned: list[Any] = field(default_factory=list)
    #: what each builder left of the configuration
    leftovers: list[dict[str, Any]] = field(default_factory=list)

    def add(self, entry: _Entry, built: Any) -> None:
        """Take ``entry``'s ready-made serde, or what its builder's ``build()`` returned."""
        serde = entry.ready
        if entry.builder is not None:
            serde, leftover = _built(entry.name, built)
            self.owned.append(serde)
            self.leftovers.append(leftover)
        if entry.is_key:
            self.key = serde
        else:
            self.value = serde

    def left_for_client(self, rest: dict[str, Any]) -> dict[str, Any]:
        """The configuration the client gets: the entries every builder left in place."""
        if not self.leftovers:
            return rest
        return {k: v for k, v in self.leftovers[-1].items()
                if all(k in lo for lo in self.leftovers)}

    def close(self) -> None:
        """Close the serdes the client built; every one is tried, the first error raised."""
        failures = _Failures()
        for serde in self._release():
            close = getattr(serde, "close", None)
            if callable(close):
                try:
                    close()
                except BaseException as exc:  # the others are still closed
                    failures.add(serde, exc)
        failures.raise_first()

    async def aclose(self) -> None:
        """``close()`` for the asyncio clients: a serde's ``aclose()`` (else its ``close()``)
        is awaited when it returns an awaitable."""
        failures = _Failures()
        for serde in self._release():
            close = getattr(serde, "aclose", None)
            if not callable(close):
                close = getattr(serde, "close", None)
            if callable(close):
                try:
                    await maybe_await(close())
                except BaseException as exc:  # the others are still closed
                    failures.add(serde, exc)
        failures.raise_first()

    def _release(self) -> list[Any]:
        owned, self.owned = self.owned, []
        return owned


class _Failures:
    """The first error met closing serdes (raised once all were tried); later ones logged."""

    def __init__(self) -> None:
        self.first: BaseException | None = None

    def add(self, serde: Any, exc: BaseException) -> None:
        if self.first is None:
            self.first = exc
        else:
            log.warning("closing serde %r failed", serde, exc_info=exc)

    def raise_first(self) -> None:
        if self.first is not None:
            raise self.first


def _entries(conf: Mapping[str, Any], key_name: str,
             value_name: str) -> tuple[list[_Entry], dict[str, Any]]:
    """The key and value entries of ``conf`` (checked, builders not run yet) and the rest."""
    if not isinstance(conf, Mapping):
        raise TypeError(f"configuration must be a dict, not {type(conf).__name__}")
    rest = dict(conf)
    entries = []
    for name, is_key in ((key_name, True), (value_name, False)):
        ready, builder = rest.pop(name, None), rest.pop(f"{name}.builder", None)
        if ready is not None and builder is not None:
            raise ConfigError(f"Cannot configure both {name} and {name}.builder; use one or "
                              f"the other")
        if ready is not None and not callable(ready):
            raise ConfigError(f"{name} must be callable, not {type(ready).__name__}")
        if builder is not None and not callable(getattr(builder, "build", None)):
            raise ConfigError(f"{name}.builder must have a build(conf, is_key) method, not "
                              f"{type(builder).__name__}")
        entries.append(_Entry(name, is_key, ready, builder))
    return entries, rest


def take_serdes(conf: Mapping[str, Any], key_name: str,
                value_name: str) -> tuple[Serdes, dict[str, Any]]:
    """The serdes of ``conf`` (entries ``key_name``/``value_name`` or their ``.builder``
    counterparts) and the configuration left for the client.

    A builder's ``build(conf, is_key)`` returns ``(serde, leftover configuration)``; the
    client keeps only the entries every builder left in place.
    """
    entries, rest = _entries(conf, key_name, value_name)
    serdes = Serdes()
    try:
        for entry in entries:
            built = None
            if entry.builder is not None:
                built = entry.builder.build(dict(rest), entry.is_key)
            serdes.add(entry, built)
    except BaseException:
        serdes.close()
        raise
    return serdes, serdes.left_for_client(rest)


async def take_serdes_async(conf: Mapping[str, Any], key_name: str,
                            value_name: str) -> tuple[Serdes, dict[str, Any]]:
    """``take_serdes`` for the asyncio clients: a ``build()`` returning an awaitable (as the
    asyncio Schema Registry builders do) is awaited."""
    entries, rest = _entries(conf, key_name, value_name)
    serdes = Serdes()
    try:
        for entry in entries:
            built = None
            if entry.builder is not None:
                built = await maybe_await(entry.builder.build(dict(rest), entry.is_key))
            serdes.add(entry, built)
    except BaseException:
        await serdes.aclose()
        raise
    return serdes, serdes.left_for_client(rest)


def _built(name: str, result: Any) -> tuple[Any, dict[str, Any]]:
    try:
        serde, leftover = result
    except (TypeError, ValueError):
        raise ConfigError(f"{name}.builder's build() must return (serde, configuration), not "
                          f"{type(result).__name__}") from None
    if not isinstance(leftover, dict):
        raise ConfigError(f"{name}.builder's build() returned a {type(leftover).__name__} as "
                          f"the configuration left over, not a dict")
    return serde, leftover


class ClusterIdResolver:
    """``cluster_id()`` for serdes: concurrent callers share one look-up in flight."""

    def __init__(self, cluster_id: Callable[..., Any],
                 timeout: float = CLUSTER_ID_TIMEOUT) -> None:
        self._cluster_id = cluster_id
        self._timeout = timeout
        self._lock = threading.Lock()
        self._pending: Future | None = None

    def __call__(self) -> Any:
        with self._lock:
            pending, mine = self._pending, self._pending is None
            if mine:
                pending = self._pending = Future()
        assert pending is not None
        if not mine:
            return pending.result()
        try:
            result = self._cluster_id(timeout=self._timeout)
        except BaseException as exc:
            self._done(pending)
            pending.set_exception(exc)
            raise
        self._done(pending)
        pending.set_result(result)
        return result

    def _done(self, pending: Future) -> None:
        with self._lock:
            if self._pending is pending:
                self._pending = None


class AsyncClusterIdResolver:
    """``await cluster_id()`` for asyncio serdes: concurrent awaiters share one look-up (the
    client's ``cluster_id`` coroutine) in flight; one that is cancelled leaves it running for
    the others. The result is not kept: the client caches the id once known."""

    def __init__(self, cluster_id: Callable[..., Awaitable[Any]],
                 timeout: float = CLUSTER_ID_TIMEOUT) -> None:
        self._cluster_id = cluster_id
        self._timeout = timeout
        self._pending: asyncio.Future[Any] | None = None

    async def __call__(self) -> Any:
        pending = self._pending
        if pending is None:
            pending = self._pending = asyncio.ensure_future(self._look_up())
        return await asyncio.shield(pending)

    async def _look_up(self) -> Any:
        try:
            return await self._cluster_id(timeout=self._timeout)
        finally:
            self._pending = None  # before the awaiters wake: the next call looks up again


def start_client(start: Callable[[dict[str, Any]], None], cluster_id: Callable[..., Any],
                 conf: Mapping[str, Any], key_name: str, value_name: str) -> Serdes:
    """Take the serdes out of ``conf``, ``start(rest)`` the client (the serdes it built are
    closed if that fails) and offer them the client's ``cluster_id``."""
    serdes, rest = take_serdes(conf, key_name, value_name)
    try:
        start(rest)
    except BaseException:
        serdes.close()
        raise
    offer_cluster_id(ClusterIdResolver(cluster_id), serdes)
    return serdes


async def start_async_client(start: Callable[[dict[str, Any]], None],
                             cluster_id: Callable[..., Awaitable[Any]],
                             conf: Mapping[str, Any], key_name: str, value_name: str) -> Serdes:
    """``start_client`` for the asyncio clients: builders and closes may be awaited, and the
    serdes are offered ``await cluster_id()`` through ``set_async_cluster_id_resolver``
    (serdes that only take the blocking resolver get none: waiting on the broker would
    stall the event loop they run on)."""
    serdes, rest = await take_serdes_async(conf, key_name, value_name)
    try:
        start(rest)
    except BaseException:
        await serdes.aclose()
        raise
    offer_cluster_id(AsyncClusterIdResolver(cluster_id), serdes, "set_async_cluster_id_resolver")
    return serdes


def offer_cluster_id(resolver: Callable[[], Any], serdes: Serdes,
                     setter: str = "set_cluster_id_resolver") -> None:
    """Give ``resolver`` to each serde that takes one (through its method ``setter``)."""
    for serde in (serdes.key, serdes.value):
        take = getattr(serde, setter, None)
        if callable(take):
            take(resolver)
