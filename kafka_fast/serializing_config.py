"""The serializer entries of a serializing client's configuration.

``key.serializer`` / ``value.serializer`` (and the deserializer pair) hold ready-made
callables, which stay the application's; ``<name>.builder`` entries hold builders
(``SerializerBuilder`` / ``DeserializerBuilder``) that make them when the client is created,
take what they need from the configuration and are owned by the client: closed by its
``close()``. A serde with ``set_cluster_id_resolver`` is given a function returning the
cluster id (one broker look-up at a time, shared by every thread that asks).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigError

log = logging.getLogger("kafka_fast.serialization")

#: seconds a serde waits for the cluster id (the Java client's default max.block.ms)
CLUSTER_ID_TIMEOUT = 60.0


@dataclass
class Serdes:
    """The key and value serdes of a client, and those it built (and so closes)."""

    key: Any = None
    value: Any = None
    owned: list[Any] = field(default_factory=list)

    def close(self) -> None:
        """Close the serdes the client built; every one is tried, the first error raised."""
        owned, self.owned = self.owned, []
        first: BaseException | None = None
        for serde in owned:
            close = getattr(serde, "close", None)
            if not callable(close):
                continue
            try:
                close()
            except BaseException as exc:  # the others are still closed
                if first is None:
                    first = exc
                else:
                    log.warning("closing serde %r failed", serde, exc_info=True)
        if first is not None:
            raise first


def take_serdes(conf: Mapping[str, Any], key_name: str,
                value_name: str) -> tuple[Serdes, dict[str, Any]]:
    """The serdes of ``conf`` (entries ``key_name``/``value_name`` or their ``.builder``
    counterparts) and the configuration left for the client.

    A builder's ``build(conf, is_key)`` returns ``(serde, leftover configuration)``; the
    client keeps only the entries every builder left in place.
    """
    if not isinstance(conf, Mapping):
        raise TypeError(f"configuration must be a dict, not {type(conf).__name__}")
    rest = dict(conf)
    wanted = []
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
        wanted.append((name, is_key, ready, builder))
    serdes = Serdes()
    leftovers: list[dict[str, Any]] = []
    made: list[Any] = []
    try:
        for name, is_key, ready, builder in wanted:
            serde = ready
            if builder is not None:
                serde, leftover = _built(name, builder.build(dict(rest), is_key))
                serdes.owned.append(serde)
                leftovers.append(leftover)
            made.append(serde)
    except BaseException:
        serdes.close()
        raise
    serdes.key, serdes.value = made
    if leftovers:
        rest = {k: v for k, v in leftovers[-1].items() if all(k in lo for lo in leftovers)}
    return serdes, rest


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


def offer_cluster_id(resolver: Callable[[], Any], serdes: Serdes) -> None:
    """Give ``resolver`` to each serde that takes one (``set_cluster_id_resolver``)."""
    for serde in (serdes.key, serdes.value):
        setter = getattr(serde, "set_cluster_id_resolver", None)
        if callable(setter):
            setter(resolver)
